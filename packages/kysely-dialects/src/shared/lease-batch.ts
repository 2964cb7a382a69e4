import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { HeldLease, RawRow } from "../types.js";
import { leaseColumnOf } from "./lease-writes.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext } from "./query-db.js";

/**
 * `(locked_until = ? AND id IN (?, …)) OR …`: the rows that still hold these tokens, one
 * group per distinct token. A claim writes one deadline into all its rows, so a batch holds
 * few distinct tokens and the engine reads each group as one index lookup of a list of ids
 * (where `(id = ? AND locked_until = ?) OR …` would make it plan one branch per row). Every
 * row is still matched only with its own token, so a row another claim took is left alone.
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
 * Ack of many leases in one statement: `DELETE FROM t WHERE (locked_until = ? AND id IN (…)) OR …`,
 * or with a processedAt column `UPDATE t SET processed_at = ? WHERE …`. With `returning`,
 * `RETURNING id` names the acks that took; every other lease was lost.
 */
export function ackManyQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  leases: readonly HeldLease[],
  now: Date,
  precision: number,
): CompiledQuery<RawRow> {
  const where = heldAny(ctx, spec, leases, precision);
  if (spec.processedAt !== undefined) {
    const update = ctx.db
      .updateTable(spec.table)
      .set({ [spec.processedAt.name]: ctx.time.encode(now, COMPARE_PRECISION) })
      .where(where);
    return ctx.updateReturning ? compiled(update.returning(spec.id.name)) : compiled(update);
  }
  const del = ctx.db.deleteFrom(spec.table).where(where);
  return ctx.updateReturning ? compiled(del.returning(spec.id.name)) : compiled(del);
}

/**
 * `SELECT id FROM t WHERE (locked_until = ? AND id IN (…)) OR … FOR UPDATE`: which leases are
 * still held, locking those rows until the transaction ends (no lock clause on SQLite, where
 * the transaction itself is the lock). Where a batched write cannot return ids (MySQL/MariaDB),
 * it runs first in the same short transaction, so the write then touches exactly these rows.
 */
export function selectHeldQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  leases: readonly HeldLease[],
  precision: number,
  lock: boolean,
): CompiledQuery<RawRow> {
  const query = ctx.db.selectFrom(spec.table).select(spec.id.name).where(heldAny(ctx, spec, leases, precision));
  return compiled(lock ? query.forUpdate() : query);
}

/**
 * Gives back rows that were claimed but never handed to a handler (a shutdown with rows still
 * buffered): `UPDATE t SET locked_until = NULL, attempt = attempt - 1 WHERE (locked_until = ? AND id IN (…)) OR …`,
 * undoing the claim's count, so the next delivery sees the attempt it would have seen.
 */
export function releaseUnstartedQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  leases: readonly HeldLease[],
  precision: number,
): CompiledQuery<RawRow> {
  const lease = leaseColumnOf(spec);
  const update = ctx.db
    .updateTable(spec.table)
    .set((eb: Eb) => {
      const values: Record<string, unknown> = { [lease]: null };
      if (spec.attempt !== undefined) values[spec.attempt.name] = eb(spec.attempt.name, "-", eb.lit(1));
      return values;
    })
    .where(heldAny(ctx, spec, leases, precision));
  return ctx.updateReturning ? compiled(update.returning(spec.id.name)) : compiled(update);
}
