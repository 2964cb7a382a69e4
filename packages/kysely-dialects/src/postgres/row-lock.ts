import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow, RowLockStatements } from "../types.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, lockedRetryQuery } from "../shared/settlement.js";
import { claimWithCte } from "./claim-cte.js";
import { postgresContext as ctx } from "./query-builder.js";

/**
 * Row-lock claim, run in the delivery's transaction. With an attempt column the attempt is
 * counted in the same statement, so a rollback (a crash) un-counts it:
 *
 * ```sql
 * with "picked" as (select "t"."id" from "t" where … order by … limit $1 for update skip locked),
 *      "claimed" as (update "t" set "attempt" = "attempt" + 1 where "id" in (select "id" from "picked") returning …)
 * select * from "claimed" order by …
 * ```
 *
 * Without one: `select … from "t" where … order by … limit $1 for update skip locked`.
 * The rows carry the attempt after counting.
 */
export function claimRowLocked(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  if (spec.attempt === undefined) return compiled(selectClaimableQuery(ctx, spec, options, true));
  return claimWithCte(spec, options, null, 0);
}

/** The claim counts attempts itself: `null`. */
export function countRowLockAttempts(): CompiledQuery | null {
  return null;
}

/** `delete from "t" where "id" = $1`, or `update "t" set "processed_at" = $1 where "id" = $2`. */
export function settleRowLockAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery {
  return ackQuery(ctx, spec, id, now);
}

/** `update "t" set "retry_after" = $1 where "id" = $2` when hidden until `retryAt`; otherwise `null` (commit as is). */
export function settleRowLockRetry(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery | null {
  return lockedRetryQuery(ctx, spec, id, retryAt);
}

export const postgresRowLock: RowLockStatements = Object.freeze({
  claim: claimRowLocked,
  countAttempts: countRowLockAttempts,
  settleAck: settleRowLockAck,
  settleRetry: settleRowLockRetry,
});
