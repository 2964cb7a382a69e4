import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery } from "kysely";
import { compiled, COMPARE_PRECISION, type Eb, type StatementContext } from "./query-db.js";

/**
 * How an engine deletes a bounded batch of rows: a delete with its own `ORDER BY` and `LIMIT`
 * where an `IN` subquery may not carry a `LIMIT` (MySQL/MariaDB); the ids a limited select picks,
 * skipping rows another transaction locked, gathered into an array first (Postgres: as a plain `IN`,
 * its planner hashes the picked ids and scans the whole table for them); else the ids of a limited
 * select (SQLite).
 */
export type BatchDelete = "order by and limit" | "ids from an array of a select" | "ids from a select";

/** Which processed rows one prune deletes. */
export interface PruneOptions {
  /** Rows whose processedAt is before this time go (the runtime's clock: the database's time as it reads it). */
  readonly before: Date;
  /** At most this many rows per statement. */
  readonly limit: number;
  /** Only rows of this group (a table with a group column). */
  readonly group?: string;
}

/**
 * Deletes up to `limit` processed rows older than `before`, oldest first. It reads the table's
 * processed rows only (`processedAt < before` is never true of a row a claim can take), through
 * the retention index where the engine has partial indexes, else through the claim index, which
 * leads with the group and processedAt there. Where rows lock, the select skips the rows another
 * pruner is deleting, so two pruners never wait on each other nor delete a row twice.
 *
 * @example
 * ```sql postgres:retention.prune(done)
 * delete from "done_jobs" where "id" = any(array((select "id" from "done_jobs" where "processed_at" < $1 order by "processed_at" limit $2 for update skip locked)))
 * ```
 * ```sql mysql:retention.prune(done)
 * delete from `done_jobs` where `processed_at` < ? order by `processed_at` limit ?
 * ```
 */
export function pruneQuery(ctx: StatementContext, style: BatchDelete, spec: InboxDescription, options: PruneOptions): CompiledQuery {
  const processedAt = spec.processedAt;
  if (processedAt === undefined) {
    throw new SqlInboxError("Declaration", "pruning needs a processedAt column: a table whose ack deletes the row keeps no handled rows", { table: spec.table });
  }
  const before = ctx.time.encode(options.before, COMPARE_PRECISION);
  const group = options.group !== undefined ? spec.group : undefined;
  if (style === "order by and limit") {
    let remove = ctx.db.deleteFrom(spec.table);
    if (group !== undefined) remove = remove.where(group.name, "=", options.group);
    return compiled(remove.where(processedAt.name, "<", before).orderBy(processedAt.name).limit(options.limit));
  }
  const id = spec.id.name;
  let pick = ctx.db.selectFrom(spec.table).select(id);
  if (group !== undefined) pick = pick.where(group.name, "=", options.group);
  pick = pick.where(processedAt.name, "<", before).orderBy(processedAt.name).limit(options.limit);
  if (ctx.capabilities.rowLock) pick = pick.forUpdate().skipLocked();
  const picked = pick;
  if (style === "ids from an array of a select") {
    // No builder for `= any(array(…))`: the array is computed once, then each id is an index lookup.
    return compiled(ctx.db.deleteFrom(spec.table).where((eb: Eb) => sql<boolean>`${eb.ref(id)} = any(array(${picked}))`));
  }
  return compiled(ctx.db.deleteFrom(spec.table).where(id, "in", picked));
}
