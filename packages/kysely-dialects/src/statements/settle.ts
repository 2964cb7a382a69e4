import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { HeldLease } from "../types.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";
import { idListMatch, type Whole } from "./shapes.js";

/** The token every lease settlement matches: the deadline the claim wrote. */
interface Held {
  readonly lease: HeldLease;
  readonly precision: number;
}

function heldWhere(ctx: StatementContext, spec: InboxDescription, held: Held | undefined) {
  // biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely query builder; each declares its own where/orderBy overloads
  return <Q extends { where(...args: any[]): Q }>(query: Q): Q => {
    if (held === undefined) return query;
    const lease = spec.lease ?? fail(spec, "the table has no lease column");
    return query.where(lease.name, "=", ctx.time.encode(held.lease.held, held.precision));
  };
}

function fail(spec: InboxDescription, message: string): never {
  throw new SqlInboxError("UnsupportedForm", message, { table: spec.table });
}

/**
 * Ack: deletes the row, or marks it processed where the table has a processedAt column; in the
 * lease form only while the row still holds the token (`held`).
 *
 * @example
 * ```sql postgres:lease.settleAck(reports)
 * delete from "report_jobs" where "id" = $1 and "locked_until" = $2
 * ```
 */
export function ackQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, now: Date, held?: Held, result?: string): CompiledQuery {
  const guard = heldWhere(ctx, spec, held);
  if (spec.processedAt !== undefined) {
    const values: Record<string, unknown> = { [spec.processedAt.name]: ctx.time.encode(now, COMPARE_PRECISION) };
    if (result !== undefined) values[(spec.result ?? fail(spec, "the table has no result column")).name] = result;
    const update = ctx.db.updateTable(tableRef(spec)).set(values).where(spec.id.name, "=", id);
    return compiled(guard(update));
  }
  if (result !== undefined) fail(spec, "a result needs a result column and a processedAt column: this table's ack deletes the row");
  return compiled(guard(ctx.db.deleteFrom(tableRef(spec)).where(spec.id.name, "=", id)));
}

/**
 * Ack with the handler's result (JSON text): marks the row processed and writes the result in the
 * same statement; in the lease form only while the row still holds the token (`held`), so a lost
 * lease writes no result.
 *
 * @example
 * ```sql postgres:lease.settleAckWithResult(results)
 * update "report_jobs" set "processed_at" = $1, "result" = $2 where "id" = $3 and "locked_until" = $4
 * ```
 */
export function ackWithResultQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, now: Date, result: string, held?: Held): CompiledQuery {
  return ackQuery(ctx, spec, id, now, held, result);
}

/**
 * Progress of a row in work (JSON text): in the lease form only while the row still holds the
 * token, as an extension is; zero rows affected means the lease was lost.
 *
 * @example
 * ```sql postgres:lease.writeProgress(results)
 * update "report_jobs" set "progress" = $1 where "id" = $2 and "locked_until" = $3
 * ```
 */
export function progressQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, progress: string, held?: Held): CompiledQuery {
  const column = spec.progress ?? fail(spec, "the table has no progress column");
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set({ [column.name]: progress })
    .where(spec.id.name, "=", id);
  return compiled(heldWhere(ctx, spec, held)(update));
}

/**
 * Ack of many rows a row-lock transaction holds (the rows of a shared claim), in that transaction:
 * deletes them, or marks them processed where the table has a processedAt column. No token: the
 * transaction's locks are the hold. Where the engine takes array parameters the ids are one
 * (`= any($1)`), so the text is the same for every number of rows. On MySQL/MariaDB a DELETE is
 * ordered by the key and limited to the list: InnoDB locks every row a DELETE reads, and without
 * the order a small table may be read by a scan, waiting on rows other claims hold; with it the
 * rows are read by the primary key. (At READ COMMITTED, as claim transactions run, an UPDATE reads
 * a row another transaction holds without waiting for it, a "semi-consistent read", and needs no order.)
 *
 * @example
 * ```sql postgres:rowLock.settleAckMany(reports, three ids)
 * delete from "report_jobs" where "id" = any($1)
 * ```
 */
export function lockedAckManyQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[] | Whole<unknown>, now: Date): CompiledQuery {
  const where = (eb: Eb) => idListMatch(eb, spec.id.name, ids);
  if (spec.processedAt !== undefined) {
    return compiled(
      ctx.db
        .updateTable(tableRef(spec))
        .set({ [spec.processedAt.name]: ctx.time.encode(now, COMPARE_PRECISION) })
        .where(where),
    );
  }
  const del = ctx.db.deleteFrom(tableRef(spec)).where(where);
  if (ctx.capabilities.arrayParameters) return compiled(del);
  const count = Array.isArray(ids) ? ids.length : 0;
  return compiled(del.orderBy(spec.id.name).limit(count));
}

/**
 * Retry at a later time in a form that holds the row by a lock (row lock, advisory): the attempt
 * was already counted by the claim, and the row is hidden until `retryAt` in the retryAfter column.
 * (A retry at once writes nothing: the hold's end gives the row back.)
 */
export function lockedRetryQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, retryAt: Date): CompiledQuery {
  const column =
    spec.retryAfter ??
    (() => {
      throw new SqlInboxError("Declaration", "a retry at a later time needs a retryAfter column", { table: spec.table, id });
    })();
  return compiled(
    ctx.db
      .updateTable(tableRef(spec))
      .set({ [column.name]: ctx.time.encode(retryAt, COMPARE_PRECISION) })
      .where(spec.id.name, "=", id),
  );
}

/**
 * Lease release while held, without counting the attempt again (the next claim counts it): clears
 * the deadline and writes `retryAt` into the retryAfter column; without a retryAfter column,
 * `retryAt` goes into the lease column instead, which hides the row just as well.
 *
 * @example
 * ```sql mysql:lease.settleRetry(reports, later)
 * update `report_jobs` set `locked_until` = ? where `id` = ? and `locked_until` = ?
 * ```
 */
export function leaseRetryQuery(ctx: StatementContext, spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery {
  const leaseColumn = spec.lease ?? fail(spec, "the table has no lease column");
  const values: Record<string, unknown> = { [leaseColumn.name]: null };
  if (retryAt !== null) {
    if (spec.retryAfter !== undefined) values[spec.retryAfter.name] = ctx.time.encode(retryAt, COMPARE_PRECISION);
    else values[leaseColumn.name] = ctx.time.encode(retryAt, precision);
  }
  const update = ctx.db.updateTable(tableRef(spec)).set(values).where(spec.id.name, "=", lease.id);
  return compiled(heldWhere(ctx, spec, { lease, precision })(update));
}

/** The attempt column's value less one: the count a claim made, given back (a snooze). */
function refundAttempt(spec: InboxDescription): Record<string, (eb: Eb) => unknown> {
  const attempt = spec.attempt;
  return attempt === undefined ? {} : { [attempt.name]: (eb: Eb) => eb(attempt.name, "-", eb.lit(1)) };
}

/**
 * Snooze in a form that holds the row by a lock (row lock, advisory), in the hold's transaction or
 * session: the row is hidden until `retryAt` in the retryAfter column (where it has one and a time
 * is given) and the attempt the claim counted is given back (`attempt = attempt - 1`), so a snooze
 * spends no attempt. A table with neither column has nothing to write: refused.
 *
 * @example
 * ```sql postgres:rowLock.settleSnooze(reports, later)
 * update "report_jobs" set "attempt" = "attempt" - 1 where "id" = $1
 * ```
 */
export function lockedSnoozeQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery {
  const values: Record<string, unknown> = {};
  if (retryAt !== null && spec.retryAfter !== undefined) values[spec.retryAfter.name] = ctx.time.encode(retryAt, COMPARE_PRECISION);
  const refund = refundAttempt(spec);
  if (Object.keys(values).length === 0 && Object.keys(refund).length === 0) {
    throw new SqlInboxError("Declaration", "a snooze writes a retryAfter column or gives back an attempt: this table has neither", { table: spec.table, id });
  }
  return compiled(
    ctx.db
      .updateTable(tableRef(spec))
      .set((eb: Eb) => ({ ...values, ...Object.fromEntries(Object.entries(refund).map(([name, value]) => [name, value(eb)])) }))
      .where(spec.id.name, "=", id),
  );
}

/**
 * Snooze on a lease, while held: the release `leaseRetryQuery` writes (the deadline cleared, `retryAt`
 * in the retryAfter column, else in the lease column), and in the same fenced statement the attempt
 * the claim counted given back (`attempt = attempt - 1`, where the table counts attempts). Zero rows:
 * the lease was lost, and nothing is given back.
 *
 * @example
 * ```sql mysql:lease.settleSnooze(reports, later)
 * update `report_jobs` set `locked_until` = ?, `attempt` = `attempt` - 1 where `id` = ? and `locked_until` = ?
 * ```
 */
export function leaseSnoozeQuery(ctx: StatementContext, spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery {
  const leaseColumn = spec.lease ?? fail(spec, "the table has no lease column");
  const values: Record<string, unknown> = { [leaseColumn.name]: null };
  if (retryAt !== null) {
    if (spec.retryAfter !== undefined) values[spec.retryAfter.name] = ctx.time.encode(retryAt, COMPARE_PRECISION);
    else values[leaseColumn.name] = ctx.time.encode(retryAt, precision);
  }
  const refund = refundAttempt(spec);
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => ({ ...values, ...Object.fromEntries(Object.entries(refund).map(([name, value]) => [name, value(eb)])) }))
    .where(spec.id.name, "=", lease.id);
  return compiled(heldWhere(ctx, spec, { lease, precision })(update));
}
