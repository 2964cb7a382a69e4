import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, ExpressionBuilder, SqlBool } from "kysely";
import type { HeldLease, RawRow } from "../types.js";
import { compiled, type StatementContext } from "./query-db.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Eb = ExpressionBuilder<any, any>;

export function leaseColumnOf(spec: InboxDescription): string {
  if (spec.lease === undefined) throw new SqlInboxError("UnsupportedForm", "the table has no lease column", { table: spec.table });
  return spec.lease.name;
}

/** The SET of a claim: the deadline, and one more attempt when the table counts them. */
export function stampValues(ctx: StatementContext, spec: InboxDescription, until: Date | null, precision: number) {
  return (eb: Eb): Record<string, unknown> => {
    const values: Record<string, unknown> = {};
    if (until !== null) values[leaseColumnOf(spec)] = ctx.time.encode(until, precision);
    if (spec.attempt !== undefined) values[spec.attempt.name] = eb(spec.attempt.name, "+", eb.lit(1));
    return values;
  };
}

/**
 * `UPDATE t SET locked_until = :until, attempt = attempt + 1 WHERE id IN (…)`: the second
 * half of a two-statement claim, run in the transaction that selected the rows.
 */
export function stampClaimedQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  ids: readonly unknown[],
  until: Date,
  precision: number,
): CompiledQuery {
  return compiled(ctx.db.updateTable(spec.table).set(stampValues(ctx, spec, until, precision)).where(idIn(spec, ids)));
}

/** `id IN (…)`, or a false condition for no ids (an empty `IN ()` is not SQL). */
export function idIn(spec: InboxDescription, ids: readonly unknown[]) {
  return (eb: Eb): Expression<SqlBool> => (ids.length === 0 ? eb.lit(false) : eb(spec.id.name, "in", [...ids])) as Expression<SqlBool>;
}

/**
 * `UPDATE t SET locked_until = :until WHERE (id = ? AND locked_until = :held) OR …`, one
 * statement for every lease in work; a row whose token changed is left alone.
 * With `returning`, `RETURNING id` tells which took.
 */
export function extendQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  leases: readonly HeldLease[],
  until: Date,
  precision: number,
  returning: boolean,
): CompiledQuery<RawRow> {
  const lease = leaseColumnOf(spec);
  const update = ctx.db
    .updateTable(spec.table)
    .set({ [lease]: ctx.time.encode(until, precision) })
    .where((eb: Eb) =>
      leases.length === 0
        ? eb.lit(false)
        : eb.or(leases.map((l) => eb.and([eb(spec.id.name, "=", l.id), eb(lease, "=", ctx.time.encode(l.held, precision))]))),
    );
  return returning ? compiled(update.returning(spec.id.name)) : compiled(update);
}

/** `SELECT id, locked_until FROM t WHERE id IN (…)`: which extensions took, where `extend` cannot return them. */
export function readLeasesQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow> {
  return compiled(ctx.db.selectFrom(spec.table).select([spec.id.name, leaseColumnOf(spec)]).where(idIn(spec, ids)));
}
