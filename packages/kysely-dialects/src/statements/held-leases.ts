import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { HeldLease, RawRow } from "../types.js";
import { leaseColumnOf } from "./claim-stamp.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext } from "./query-db.js";
import { tableRef } from "./table-ref.js";

/**
 * The rows that still hold these tokens: one arm per distinct token, each matching the lease
 * column to the token and the id to the list of ids that hold it. A claim writes one deadline
 * into all its rows, so a batch holds few distinct tokens and the engine reads each arm as one
 * index lookup of a list of ids (one arm per row would make it plan one branch per row). Every
 * row is still matched only with its own token, so a row another claim took is left alone.
 *
 * @example
 * // two leases holding one token and one holding another, on Postgres
 * ```sql postgres:lease.settleAckMany(two tokens)
 * delete from "report_jobs" where (("locked_until" = $1 and "id" in ($2, $3)) or ("locked_until" = $4 and "id" = $5)) returning "id"
 * ```
 */
export function heldAny(ctx: StatementContext, spec: InboxDescription, leases: readonly HeldLease[], precision: number) {
  const lease = leaseColumnOf(spec);
  const groups = new Map<number, { held: Date; ids: unknown[] }>();
  for (const l of leases) {
    const key = l.held.getTime();
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { held: l.held, ids: [l.id] });
    else group.ids.push(l.id);
  }
  return (eb: Eb): Expression<SqlBool> => {
    if (leases.length === 0) return eb.lit(false) as Expression<SqlBool>;
    const arms = [...groups.values()].map((g) =>
      eb.and([eb(lease, "=", ctx.time.encode(g.held, precision)), g.ids.length === 1 ? eb(spec.id.name, "=", g.ids[0]) : eb(spec.id.name, "in", g.ids)]),
    );
    return arms.length === 1 ? (arms[0] as Expression<SqlBool>) : eb.or(arms);
  };
}

/**
 * Ack of many leases in one statement: deletes the rows still holding their tokens, or marks
 * them processed where the table has a processedAt column. Where the engine has
 * `UPDATE … RETURNING` the returned ids are the acks that took; every other lease was lost.
 */
export function ackManyQuery(ctx: StatementContext, spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): CompiledQuery<RawRow> {
  const where = heldAny(ctx, spec, leases, precision);
  if (spec.processedAt !== undefined) {
    const update = ctx.db
      .updateTable(tableRef(spec))
      .set({ [spec.processedAt.name]: ctx.time.encode(now, COMPARE_PRECISION) })
      .where(where);
    return ctx.capabilities.updateReturning ? compiled(update.returning(spec.id.name)) : compiled(update);
  }
  const del = ctx.db.deleteFrom(tableRef(spec)).where(where);
  return ctx.capabilities.updateReturning ? compiled(del.returning(spec.id.name)) : compiled(del);
}

/**
 * The ids of the leases still held, their rows locked until the transaction ends where the
 * engine has row locks (on SQLite the transaction itself is the lock). Where a batched write
 * cannot return ids (MySQL/MariaDB), it runs first in the same short transaction, so the write
 * then touches exactly these rows.
 */
export function selectHeldQuery(ctx: StatementContext, spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  const query = ctx.db
    .selectFrom(tableRef(spec))
    .select(spec.id.name)
    .where(heldAny(ctx, spec, leases, precision));
  return compiled(ctx.capabilities.rowLock ? query.forUpdate() : query);
}

/**
 * Gives back rows that were claimed but never handed to a handler (a shutdown with rows still
 * buffered): clears the deadline of each row still holding its token and takes one off its
 * attempt, undoing the claim's count, so the next delivery sees the attempt it would have seen.
 */
export function releaseUnstartedQuery(ctx: StatementContext, spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  const lease = leaseColumnOf(spec);
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => {
      const values: Record<string, unknown> = { [lease]: null };
      if (spec.attempt !== undefined) values[spec.attempt.name] = eb(spec.attempt.name, "-", eb.lit(1));
      return values;
    })
    .where(heldAny(ctx, spec, leases, precision));
  return ctx.capabilities.updateReturning ? compiled(update.returning(spec.id.name)) : compiled(update);
}
