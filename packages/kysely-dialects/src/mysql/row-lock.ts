import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow, RowLockStatements } from "../types.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { idIn, stampValues } from "../shared/lease-writes.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, lockedRetryQuery } from "../shared/settlement.js";
import { mysqlContext as ctx } from "./query-builder.js";

/**
 * Row-lock claim, in a READ COMMITTED transaction the runtime keeps open while the handler runs:
 * ``select … from `t` where <claimable> order by … limit ? for update skip locked``.
 * Neither MySQL nor MariaDB 10.6 has `UPDATE … RETURNING`, so the attempt is counted by
 * `countAttempts` in the same transaction; the rows carry the attempt *before* counting.
 */
export function claimRowLocked(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, true));
}

/** ``update `t` set `attempt` = `attempt` + 1 where `id` in (?, …)``; `null` without an attempt column. */
export function countRowLockAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery | null {
  if (spec.attempt === undefined) return null;
  return compiled(ctx.db.updateTable(spec.table).set(stampValues(ctx, spec, null, 0)).where(idIn(spec, ids)));
}

/** ``delete from `t` where `id` = ?``, or ``update `t` set `processed_at` = ? where `id` = ?``. */
export function settleRowLockAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery {
  return ackQuery(ctx, spec, id, now);
}

/** ``update `t` set `retry_after` = ? where `id` = ?`` when hidden until `retryAt`; otherwise `null` (commit as is). */
export function settleRowLockRetry(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery | null {
  return lockedRetryQuery(ctx, spec, id, retryAt);
}

export const mysqlRowLock: RowLockStatements = Object.freeze({
  claim: claimRowLocked,
  countAttempts: countRowLockAttempts,
  settleAck: settleRowLockAck,
  settleRetry: settleRowLockRetry,
});
