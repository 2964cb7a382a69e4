import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { compiled, probeLock, type StatementContext, tableRef } from "./query-db.js";

/** The columns a job's state is read from: its id and every role column that tells a state, plus its advisory key's columns. */
function stateColumns(spec: InboxDescription): string[] {
  const roles = [spec.id, spec.attempt, spec.lease, spec.retryAfter, spec.processedAt, spec.group, spec.lastError, spec.failedAttempts];
  const keyColumns = (spec.advisoryKey?.parts ?? []).flatMap((p) => ("column" in p ? [p.column.name] : []));
  return [...new Set([...roles.flatMap((c) => (c === undefined ? [] : [c.name])), ...keyColumns])];
}

/**
 * One job's row by id, with the columns that tell its state (the id, attempt, lease, retryAfter,
 * processedAt, group, last error, failed attempts, and the columns its advisory key is made of; then the
 * result and progress columns as their JSON text),
 * each under its own name. A plain read: it takes no lock and waits for none, so a row a row-lock
 * claim holds reads as it was last committed (its attempt before the claim counted it).
 *
 * @example
 * ```sql postgres:jobs.read(reports)
 * select "id", "attempt", "locked_until" from "report_jobs" where "id" = $1
 * ```
 */
export function jobReadQuery(ctx: StatementContext, spec: InboxDescription, id: unknown): CompiledQuery<RawRow> {
  const json = [spec.result, spec.progress].flatMap((c) => (c === undefined ? [] : [c.name]));
  // JSON columns read as their text, so a JSON string is told from JSON text on every engine.
  const asText = json.map((name) => sql<string>`cast(${sql.ref(name)} as ${sql.raw(ctx.capabilities.jsonTextCast)})`.as(name));
  const plain = stateColumns(spec).filter((name) => !json.includes(name));
  return compiled(
    ctx.db
      .selectFrom(tableRef(spec))
      .select([...plain, ...asText])
      .where(spec.id.name, "=", id),
  );
}

/**
 * Row lock: the job's id unless a transaction holds its row. A skipping lock (`probeLock`) in a statement
 * of its own (its own transaction): no row back while a claim holds it. The lock lasts the
 * statement alone, and a claim in that instant passes over the row until its next poll.
 *
 * @example
 * ```sql mysql:jobs.lockProbe(reports)
 * select `id` as `id` from `report_jobs` where `id` = ? for update skip locked
 * ```
 */
export function jobLockProbeQuery(ctx: StatementContext, spec: InboxDescription, id: unknown): CompiledQuery<{ id: unknown }> {
  return compiled(probeLock(ctx, ctx.db.selectFrom(tableRef(spec)).select(sql.ref(spec.id.name).as("id")).where(spec.id.name, "=", id)));
}

/**
 * A dead letter in a destination table, by the id it kept (a destination that generates its own id
 * keeps none: its rows cannot be found by the source's id): the id, and the last error and the
 * attempts spent where the destination has columns for them.
 */
export function deadLetterReadQuery(ctx: StatementContext, destination: InboxDescription, id: unknown): CompiledQuery<RawRow> {
  const columns = [destination.id, destination.lastError, destination.failedAttempts].flatMap((c) => (c === undefined ? [] : [c.name]));
  return compiled(ctx.db.selectFrom(tableRef(destination)).select(columns).where(destination.id.name, "=", id));
}

/**
 * Whether a cancel request for the job waits in the control table (written by `cancel` for a row in
 * work, under its route's name or its table's): one row `{ target }` per request.
 */
export function cancelRequestedQuery(ctx: StatementContext, controlTable: string, spec: InboxDescription, route: string, id: unknown): CompiledQuery<{ target: string }> {
  return compiled(
    ctx.db
      .selectFrom(controlTable)
      .select("target")
      .where("kind", "=", "cancel")
      .where("target", "=", String(id))
      .where("route", "in", [...new Set([route, spec.table])]),
  );
}
