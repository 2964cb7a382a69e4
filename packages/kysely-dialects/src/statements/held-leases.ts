import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { HeldLease, RawRow } from "../types.js";
import { leaseColumnOf } from "./claim-stamp.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";
import { idListMatch, type StatementShapes, Whole } from "./shapes.js";

/** The leases of a batch grouped by token: a claim writes one deadline into all its rows. */
export interface TokenGroup {
  readonly held: Date;
  /** The ids holding `held`; one array parameter where the engine has them (`Whole`), else one parameter each. */
  readonly ids: readonly unknown[] | Whole<unknown>;
}

/** Groups leases by token, in the order tokens first appear. */
export function tokenGroups(leases: readonly HeldLease[]): { held: Date; ids: unknown[] }[] {
  const groups = new Map<number, { held: Date; ids: unknown[] }>();
  for (const l of leases) {
    const key = l.held.getTime();
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { held: l.held, ids: [l.id] });
    else group.ids.push(l.id);
  }
  return [...groups.values()];
}

/**
 * The rows that still hold these tokens: one arm per distinct token, each matching the lease
 * column to the token and the id to the list of ids that hold it. A claim writes one deadline
 * into all its rows, so a batch holds few distinct tokens and the engine reads each arm as one
 * index lookup of a list of ids (one arm per row would make it plan one branch per row). Every
 * row is still matched only with its own token, so a row another claim took is left alone.
 * Where the engine takes array parameters, each list is one (`= any($2)`), so the text is the
 * same for every batch with as many tokens.
 *
 * @example
 * // two leases holding one token and one holding another, on Postgres
 * ```sql postgres:lease.settleAckMany(two tokens)
 * delete from "report_jobs" where (("locked_until" = $1 and "id" = any($2)) or ("locked_until" = $3 and "id" = any($4))) returning "id"
 * ```
 */
function heldAny(ctx: StatementContext, spec: InboxDescription, groups: readonly TokenGroup[], precision: number) {
  const lease = leaseColumnOf(spec);
  return (eb: Eb): Expression<SqlBool> => {
    if (groups.length === 0) return eb.lit(false) as Expression<SqlBool>;
    const arms = groups.map((g) => eb.and([eb(lease, "=", ctx.time.encode(g.held, precision)), idListMatch(eb, spec.id.name, g.ids)]));
    return arms.length === 1 ? (arms[0] as Expression<SqlBool>) : eb.or(arms);
  };
}

/**
 * `ids` padded with its last id to the next of a few lengths: as they are up to 8, then multiples of 8 up
 * to 64, then multiples of 64 (at most 63 extra parameters, an eighth of a 512-id list).
 */
export function paddedIds(ids: readonly unknown[]): readonly unknown[] {
  const n = ids.length;
  const step = n <= 8 ? 1 : n <= 64 ? 8 : 64;
  const length = Math.ceil(n / step) * step;
  if (length === n) return ids;
  const padded = ids.slice();
  const last = ids[n - 1];
  while (padded.length < length) padded.push(last);
  return padded;
}

/**
 * A statement over held leases, compiled once per shape: the number of tokens and, where a list
 * is not one parameter, the padded length of each token's list.
 */
export function heldShape<R>(
  shapes: StatementShapes,
  ctx: StatementContext,
  spec: InboxDescription,
  kind: string,
  leases: readonly HeldLease[],
  extra: { now?: Date },
  build: (ctx: StatementContext, groups: readonly TokenGroup[], now: Date | undefined) => CompiledQuery<R>,
): CompiledQuery<R> {
  const groups = tokenGroups(leases);
  const whole = ctx.capabilities.arrayParameters;
  const values: Record<string, unknown> = extra.now !== undefined ? { now: extra.now } : {};
  let key = `${kind}|${groups.length}`;
  groups.forEach((g, i) => {
    values[`held${i}`] = g.held;
    // One parameter per id: the list padded to a few lengths (its last id repeated, which matches no row
    // twice), so the acks a subscription gathers, whose counts vary, share a few texts and compiled shapes.
    const ids = whole ? g.ids : paddedIds(g.ids);
    values[`ids${i}`] = whole ? new Whole(ids) : ids;
    if (!whole) key += `,${ids.length}`;
  });
  return shapes.fill(spec, key, values, (c, v) =>
    build(
      c,
      groups.map((_, i) => ({ held: v[`held${i}`] as Date, ids: v[`ids${i}`] as readonly unknown[] | Whole<unknown> })),
      v.now as Date | undefined,
    ),
  );
}

/**
 * Ack of many leases in one statement: deletes the rows still holding their tokens, or marks
 * them processed where the table has a processedAt column. Where the engine has
 * `UPDATE … RETURNING` the returned ids are the acks that took; every other lease was lost.
 */
export function ackManyQuery(ctx: StatementContext, spec: InboxDescription, groups: readonly TokenGroup[], now: Date, precision: number): CompiledQuery<RawRow> {
  const where = heldAny(ctx, spec, groups, precision);
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
export function selectHeldQuery(ctx: StatementContext, spec: InboxDescription, groups: readonly TokenGroup[], precision: number): CompiledQuery<RawRow> {
  const query = ctx.db
    .selectFrom(tableRef(spec))
    .select(spec.id.name)
    .where(heldAny(ctx, spec, groups, precision));
  return compiled(ctx.capabilities.rowLock ? query.forUpdate() : query);
}

/**
 * Gives back rows that were claimed but never handed to a handler (a shutdown with rows still
 * buffered): clears the deadline of each row still holding its token and takes one off its
 * attempt, undoing the claim's count, so the next delivery sees the attempt it would have seen.
 */
export function releaseUnstartedQuery(ctx: StatementContext, spec: InboxDescription, groups: readonly TokenGroup[], precision: number): CompiledQuery<RawRow> {
  const lease = leaseColumnOf(spec);
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => {
      const values: Record<string, unknown> = { [lease]: null };
      if (spec.attempt !== undefined) values[spec.attempt.name] = eb(spec.attempt.name, "-", eb.lit(1));
      return values;
    })
    .where(heldAny(ctx, spec, groups, precision));
  return ctx.capabilities.updateReturning ? compiled(update.returning(spec.id.name)) : compiled(update);
}
