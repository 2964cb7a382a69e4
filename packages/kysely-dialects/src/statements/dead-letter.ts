import { SqlInboxError, type ColumnDescription, type InboxDescription } from "@sqlinbox/core/internal";
import { sql, type AliasedExpression, type CompiledQuery } from "kysely";
import type { HeldLease } from "../types.js";
import { compiled, COMPARE_PRECISION, type Eb, type StatementContext } from "./query-db.js";

/** What a dead-letter move records where the destination has columns for it. */
export interface DeadLetterRecord {
  /** The last error (`lastError` column). */
  readonly lastError: string | null;
  /** The attempts spent (`failedAttempts` column). */
  readonly attempts: number | null;
  /**
   * When the row was dead-lettered: written into a destination table's `processedAt` column, the
   * time its retention (`InboxQueue.retain({ deadLettered })`) counts from. Unset: left out.
   */
  readonly at?: Date;
}

/** The lease token a move in the lease form matches, as every lease settlement does. */
export interface HeldToken {
  readonly lease: HeldLease;
  readonly precision: number;
}

function leaseGuard(ctx: StatementContext, spec: InboxDescription, held: HeldToken | undefined) {
  // biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely query builder; each declares its own where overloads
  return <Q extends { where(...args: any[]): Q }>(query: Q): Q => {
    if (held === undefined) return query;
    const lease = spec.lease;
    if (lease === undefined) throw new SqlInboxError("UnsupportedForm", "a lease token on a table with no lease column", { table: spec.table });
    return query.where(`${spec.table}.${lease.name}`, "=", ctx.time.encode(held.lease.held, held.precision));
  };
}

/** The source column a destination column is filled from: same role, or a data column of the same name. */
function sourceOf(source: InboxDescription, dest: ColumnDescription): ColumnDescription | undefined {
  switch (dest.role) {
    case "id":
      return source.id;
    case "attempt":
    case "payload":
    case "group":
    case "priority":
    case "orderKey":
      return source[dest.role];
    case "data":
      return source.columns.find((c) => c.role === "data" && c.name === dest.name);
    default:
      return undefined;
  }
}

/**
 * Dead letter to another table: one `INSERT … SELECT` copies the row (its payload, data columns
 * of the same name, the id unless the destination generates its own) and records the last error,
 * the attempts and the time of the move (its processedAt) where the destination has columns for them. In the lease form the select
 * matches the held token, so a lost lease inserts nothing.
 *
 * @example
 * ```sql postgres:deadLetter.toTable(reports, dead, held)
 * insert into "dead_jobs" ("payload", "last_error", "failed_attempts") select "report_jobs"."payload" as "payload", $1 as "last_error", $2 + 0 as "failed_attempts" from "report_jobs" where "report_jobs"."id" = $3 and "report_jobs"."locked_until" = $4
 * ```
 */
export function moveToTableQuery(
  ctx: StatementContext,
  timeType: string,
  source: InboxDescription,
  dest: InboxDescription,
  id: unknown,
  record: DeadLetterRecord,
  held?: HeldToken,
): CompiledQuery {
  const names: string[] = [];
  const values: Array<(eb: Eb) => AliasedExpression<unknown, string>> = [];
  for (const column of dest.columns) {
    if (column.generated) continue;
    if (column.role === "lastError") {
      names.push(column.name);
      values.push((eb) => eb.val(record.lastError).as(column.name));
      continue;
    }
    if (column.role === "failedAttempts") {
      names.push(column.name);
      // `+ 0` gives the parameter a number's type where a bare one in a select list would be text (Postgres).
      const attempts = record.attempts;
      values.push((eb) => (attempts === null ? eb.val(null).as(column.name) : eb(eb.val(attempts), "+", eb.lit(0)).as(column.name)));
      continue;
    }
    if (column.role === "processedAt" && record.at !== undefined) {
      names.push(column.name);
      // Cast to the column's type: a bare parameter in a select list is text (Postgres).
      const at = ctx.time.encode(record.at, COMPARE_PRECISION);
      values.push((eb) => eb.cast(eb.val(at), sql.raw(timeType)).as(column.name));
      continue;
    }
    const from = sourceOf(source, column);
    if (from === undefined) continue;
    names.push(column.name);
    values.push((eb) => eb.ref(`${source.table}.${from.name}`).as(column.name));
  }
  const select = ctx.db
    .selectFrom(source.table)
    .select((eb: Eb) => values.map((v) => v(eb)))
    .where(`${source.table}.${source.id.name}`, "=", id);
  return compiled(
    ctx.db
      .insertInto(dest.table)
      .columns(names)
      .expression(leaseGuard(ctx, source, held)(select)),
  );
}

/**
 * The second half of a move to a table: deletes the source row, in the same transaction as the
 * insert; in the lease form only while the row still holds the token.
 *
 * @example
 * ```sql mysql:deadLetter.removeMoved(reports, held)
 * delete from `report_jobs` where `report_jobs`.`id` = ? and `report_jobs`.`locked_until` = ?
 * ```
 */
export function removeMovedQuery(ctx: StatementContext, source: InboxDescription, id: unknown, held?: HeldToken): CompiledQuery {
  return compiled(leaseGuard(ctx, source, held)(ctx.db.deleteFrom(source.table).where(`${source.table}.${source.id.name}`, "=", id)));
}

/**
 * Dead letter to a group of the same table: one update sets the group (and the last error and
 * attempts where the table has columns for them) and, in the lease form, clears the lease so the
 * group's subscriber can claim it at once; fenced by the token there.
 *
 * @example
 * ```sql sqlite:deadLetter.toGroup(grouped, held)
 * update "jobs" set "grp" = ?, "locked_until" = ? where "jobs"."id" = ? and "jobs"."locked_until" = ?
 * ```
 */
export function moveToGroupQuery(ctx: StatementContext, source: InboxDescription, id: unknown, group: string, record: DeadLetterRecord, held?: HeldToken): CompiledQuery {
  const groupColumn = source.group;
  if (groupColumn === undefined) throw new SqlInboxError("Declaration", "a dead-letter group needs a group column", { table: source.table, id });
  const values: Record<string, unknown> = { [groupColumn.name]: group };
  if (held !== undefined && source.lease !== undefined) values[source.lease.name] = null;
  if (source.lastError !== undefined) values[source.lastError.name] = record.lastError;
  if (source.failedAttempts !== undefined) values[source.failedAttempts.name] = record.attempts;
  return compiled(leaseGuard(ctx, source, held)(ctx.db.updateTable(source.table).set(values).where(`${source.table}.${source.id.name}`, "=", id)));
}
