import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { describedColumns, whereClaimable } from "./claimable.js";
import { col, compiled, type Eb, type QueryDb, type StatementContext, tableRef } from "./query-db.js";
import { idListMatch, type Whole } from "./shapes.js";

/**
 * Takes a row whose key this session has just locked: counts its attempt, only while the row is
 * still claimable. The claimable check is repeated because another session may have finished the
 * row between the candidate select and the lock: one row affected means it is ours, zero that it is gone.
 * Without an attempt column it writes `id = id`, so the affected count still answers.
 *
 * Where the engine has `UPDATE … RETURNING` the take returns the row as it counted it (its
 * described columns), so the attempt a delivery reports is the one its take wrote, never the
 * candidate's, which may be older than a retry of the same row. Elsewhere `takenRowQuery` reads it
 * back on the same session.
 *
 * ```sql postgres:advisory.take(rich)
 * update "jobs" set "attempt" = "attempt" + 1 where "id" = $1
 *   and ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $2))
 *   returning "id", "attempt", "payload", "retry_after", "processed_at", "customer_id"
 * ```
 */
export function takeQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, now: Date, group?: string): CompiledQuery<RawRow> {
  const attempt = spec.attempt?.name;
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => (attempt !== undefined ? { [attempt]: eb(attempt, "+", eb.lit(1)) } : { [spec.id.name]: eb.ref(spec.id.name) }))
    .where(spec.id.name, "=", id);
  const take = whereClaimable(ctx, spec, claimableAt(now, group), update);
  return ctx.capabilities.updateReturning ? compiled(take.returning(spec.columns.map((c) => c.name))) : compiled(take);
}

/**
 * The claimable check of a take, the subscription's group included: a row moved to another group
 * (a dead letter into a group) since the candidates were read is not the subscription's any more.
 */
function claimableAt(now: Date, group: string | undefined): { now: Date; group?: string } {
  return group === undefined ? { now } : { now, group };
}

/**
 * The row a take just counted, read back on the session that holds its key (MySQL/MariaDB, which
 * have no `UPDATE … RETURNING`): the key's lock keeps every other take off the row, so this read
 * sees the attempt this session's take wrote. Only where the take cannot return the row itself.
 *
 * ```sql mysql:advisory.readTaken(rich)
 * select `jobs`.`id`, `jobs`.`attempt`, `jobs`.`payload`, `jobs`.`retry_after`, `jobs`.`processed_at`, `jobs`.`customer_id`
 *   from `jobs` where `jobs`.`id` = ?
 * ```
 */
export function takenRowQuery(ctx: StatementContext, spec: InboxDescription, id: unknown): CompiledQuery<RawRow> {
  const db: QueryDb = ctx.db;
  return compiled(db.selectFrom(tableRef(spec)).select(describedColumns(spec)).where(col(spec, spec.id.name), "=", id));
}

/**
 * Takes the rows of a batch claim whose keys this session has just locked, in one statement: counts
 * each one's attempt while it is still claimable (a row finished by another session between the
 * candidate read and the lock is left alone). Where the engine has `UPDATE … RETURNING` the rows
 * come back as counted; elsewhere `takenRowsQuery` reads them back on the same session.
 *
 * ```sql postgres:advisory.takeMany(rich, three ids)
 * update "jobs" set "attempt" = "attempt" + 1 where "id" = any($1)
 *   and ("jobs"."processed_at" is null and ("jobs"."retry_after" is null or "jobs"."retry_after" <= $2))
 *   returning "id", "attempt", "payload", "retry_after", "processed_at", "customer_id"
 * ```
 */
export function takeManyQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[] | Whole<unknown>, now: Date, group?: string): CompiledQuery<RawRow> {
  const attempt = spec.attempt?.name;
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => (attempt !== undefined ? { [attempt]: eb(attempt, "+", eb.lit(1)) } : { [spec.id.name]: eb.ref(spec.id.name) }))
    .where((eb: Eb) => idListMatch(eb, spec.id.name, ids));
  const take = whereClaimable(ctx, spec, claimableAt(now, group), update);
  return ctx.capabilities.updateReturning ? compiled(take.returning(spec.columns.map((c) => c.name))) : compiled(take);
}

/**
 * The rows a batch take just counted, read back on the session that holds their keys (MySQL/MariaDB):
 * the locks keep every other take off them, and the take changed nothing that makes a row claimable,
 * so the rows still claimable as of the take's `now` are exactly the rows it counted; a row the take
 * found finished reads as not claimable and is left out.
 *
 * ```sql mysql:advisory.readTakenMany(rich, three ids)
 * select `jobs`.`id`, `jobs`.`attempt`, `jobs`.`payload`, `jobs`.`retry_after`, `jobs`.`processed_at`, `jobs`.`customer_id`
 *   from `jobs` where `id` in (?, ?, ?)
 *   and (`jobs`.`processed_at` is null and (`jobs`.`retry_after` is null or `jobs`.`retry_after` <= ?))
 * ```
 */
export function takenRowsQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[] | Whole<unknown>, now: Date, group?: string): CompiledQuery<RawRow> {
  const db: QueryDb = ctx.db;
  const select = db
    .selectFrom(tableRef(spec))
    .select(describedColumns(spec))
    .where((eb: Eb) => idListMatch(eb, spec.id.name, ids));
  return compiled(whereClaimable(ctx, spec, claimableAt(now, group), select));
}
