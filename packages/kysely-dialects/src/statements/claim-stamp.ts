import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import { compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";

/** The deadline a lease claim writes, rounded down to what the column keeps. */
export interface LeaseStamp {
  readonly until: Date;
  readonly precision: number;
}

export function leaseColumnOf(spec: InboxDescription): string {
  if (spec.lease === undefined) throw new SqlInboxError("UnsupportedForm", "the table has no lease column", { table: spec.table });
  return spec.lease.name;
}

/**
 * The attempt a delivery reads, from the attempt column as its claim left it: one less, because a
 * claim counts the column up as it takes the row (`stampValues`). A table that starts the column
 * at 1 (`DEFAULT 1`) delivers attempt 1 first, and attempt 2 after a crash that spent one; a row
 * never claimed holds 1 and has made 0 attempts. The runtime hands it to handlers (`keys.attempt`);
 * the operator tools show it for a lease in work and count attempts made by it.
 *
 * @example
 * deliveredAttempt(2)   // 1: the first delivery of a column that starts at 1
 * deliveredAttempt("3") // 2: MySQL reads a BIGINT as text
 */
export function deliveredAttempt(counted: unknown): number {
  return Number(counted) - 1;
}

/** The SET of a claim: the deadline (lease form; `null` in the row-lock form), and one more attempt when the table counts them. */
export function stampValues(ctx: StatementContext, spec: InboxDescription, lease: LeaseStamp | null) {
  return (eb: Eb): Record<string, unknown> => {
    const values: Record<string, unknown> = {};
    if (lease !== null) values[leaseColumnOf(spec)] = ctx.time.encode(lease.until, lease.precision);
    if (spec.attempt !== undefined) values[spec.attempt.name] = eb(spec.attempt.name, "+", eb.lit(1));
    return values;
  };
}

/** `id IN (…)`, or a false condition for no ids (an empty `IN ()` is not SQL). */
export function idIn(spec: InboxDescription, ids: readonly unknown[]) {
  return (eb: Eb): Expression<SqlBool> => (ids.length === 0 ? eb.lit(false) : eb(spec.id.name, "in", [...ids])) as Expression<SqlBool>;
}

/**
 * Marks rows a locking select just picked: writes the deadline (if any) and counts the attempt.
 * The second half of a two-statement claim, run in the transaction that selected the rows.
 */
export function stampPickedQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[], lease: LeaseStamp | null): CompiledQuery {
  return compiled(
    ctx.db
      .updateTable(tableRef(spec))
      .set(stampValues(ctx, spec, lease))
      .where(idIn(spec, ids)),
  );
}

/**
 * Takes back the attempt a claim counted for rows it never handed to a handler, in the claim's
 * transaction (a shared row-lock claim stopped with rows still buffered): they leave as they came.
 * `attempt` is the table's attempt column.
 */
export function uncountPickedQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[], attempt: string): CompiledQuery {
  return compiled(
    ctx.db
      .updateTable(tableRef(spec))
      .set((eb: Eb) => ({ [attempt]: eb(attempt, "-", eb.lit(1)) }))
      .where(idIn(spec, ids)),
  );
}
