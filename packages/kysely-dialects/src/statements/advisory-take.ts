import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { describedColumns, whereClaimable } from "./claimable.js";
import { col, compiled, type Eb, type QueryDb, type StatementContext, tableRef } from "./query-db.js";

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
export function takeQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, now: Date): CompiledQuery<RawRow> {
  const attempt = spec.attempt?.name;
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => (attempt !== undefined ? { [attempt]: eb(attempt, "+", eb.lit(1)) } : { [spec.id.name]: eb.ref(spec.id.name) }))
    .where(spec.id.name, "=", id);
  const take = whereClaimable(ctx, spec, { now }, update);
  return ctx.capabilities.updateReturning ? compiled(take.returning(spec.columns.map((c) => c.name))) : compiled(take);
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
