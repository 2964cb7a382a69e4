import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { HeldLease } from "../types.js";
import { COMPARE_PRECISION, compiled, type StatementContext } from "./query-db.js";

/** The token check every lease settlement carries: `AND locked_until = :held`. */
interface Held {
  readonly lease: HeldLease;
  readonly precision: number;
}

function heldWhere(ctx: StatementContext, spec: InboxDescription, held: Held | undefined) {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
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
 * Ack: `DELETE FROM t WHERE id = ? [AND locked_until = ?]`, or with a processedAt column
 * `UPDATE t SET processed_at = ? WHERE id = ? [AND locked_until = ?]`.
 */
export function ackQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, now: Date, held?: Held): CompiledQuery {
  const guard = heldWhere(ctx, spec, held);
  if (spec.processedAt !== undefined) {
    const update = ctx.db
      .updateTable(spec.table)
      .set({ [spec.processedAt.name]: ctx.time.encode(now, COMPARE_PRECISION) })
      .where(spec.id.name, "=", id);
    return compiled(guard(update));
  }
  return compiled(guard(ctx.db.deleteFrom(spec.table).where(spec.id.name, "=", id)));
}

/**
 * Retry in a form that holds the row by a lock (row lock, advisory): the attempt was
 * already counted by the claim, so there is nothing to write unless the row is hidden
 * until `retryAt`: `UPDATE t SET retry_after = ? WHERE id = ?`. `null` when there is nothing to write.
 */
export function lockedRetryQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery | null {
  if (retryAt === null) return null;
  const column =
    spec.retryAfter ??
    (() => {
      throw new SqlInboxError("Declaration", "a retry at a later time needs a retryAfter column", { table: spec.table, id });
    })();
  return compiled(
    ctx.db
      .updateTable(spec.table)
      .set({ [column.name]: ctx.time.encode(retryAt, COMPARE_PRECISION) })
      .where(spec.id.name, "=", id),
  );
}

/**
 * Lease release while held, without counting the attempt again (the next claim counts it):
 * `UPDATE t SET locked_until = NULL[, retry_after = :retryAt] WHERE id = ? AND locked_until = :held`;
 * without a retryAfter column, `retryAt` goes into the lease column (`SET locked_until = :retryAt`).
 */
export function leaseRetryQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  lease: HeldLease,
  retryAt: Date | null,
  precision: number,
): CompiledQuery {
  const leaseColumn = spec.lease ?? fail(spec, "the table has no lease column");
  const values: Record<string, unknown> = { [leaseColumn.name]: null };
  if (retryAt !== null) {
    if (spec.retryAfter !== undefined) values[spec.retryAfter.name] = ctx.time.encode(retryAt, COMPARE_PRECISION);
    else values[leaseColumn.name] = ctx.time.encode(retryAt, precision);
  }
  const update = ctx.db.updateTable(spec.table).set(values).where(spec.id.name, "=", lease.id);
  return compiled(heldWhere(ctx, spec, { lease, precision })(update));
}
