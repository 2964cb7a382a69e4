import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, HeldLease, LeaseClaimOptions, LeaseStatements, RawRow } from "../types.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { extendQuery, readLeasesQuery, stampClaimedQuery } from "../shared/lease-writes.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, leaseRetryQuery } from "../shared/settlement.js";
import { ackManyQuery, releaseUnstartedQuery, selectHeldQuery } from "../shared/lease-batch.js";
import { claimWithCte } from "./claim-cte.js";
import { postgresContext as ctx } from "./query-builder.js";

/**
 * Lease claim in one statement (it commits on its own):
 *
 * ```sql
 * with "picked" as (select "t"."id" from "t"
 *                   where ("t"."locked_until" is null or "t"."locked_until" <= $now) … order by … limit $n for update skip locked),
 *      "claimed" as (update "t" set "locked_until" = $until, "attempt" = "attempt" + 1
 *                    where "id" in (select "id" from "picked") returning …)
 * select * from "claimed" order by …
 * ```
 *
 * The token is `time.truncate(until, precision)`.
 */
export function claimLeased(spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow> {
  return claimWithCte(spec, options, options.until, options.precision);
}

/** `select … from "t" where <claimable> order by … limit $n for update skip locked`. */
export function selectLeaseClaimable(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, true));
}

/** `update "t" set "locked_until" = $1, "attempt" = "attempt" + 1 where "id" in ($2, …)`. */
export function stampLeaseClaimed(spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number): CompiledQuery {
  return stampClaimedQuery(ctx, spec, ids, until, precision);
}

/** `update "t" set "locked_until" = $1 where ("id" = $2 and "locked_until" = $3) or … returning "id"`. */
export function extendLeases(spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number): CompiledQuery<RawRow> {
  return extendQuery(ctx, spec, leases, until, precision, true);
}

/** `select "id", "locked_until" from "t" where "id" in ($1, …)`. */
export function readLeases(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow> {
  return readLeasesQuery(ctx, spec, ids);
}

/** `delete from "t" where "id" = $1 and "locked_until" = $2` (or `update … set "processed_at"` with the same check). */
export function settleLeaseAck(spec: InboxDescription, lease: HeldLease, now: Date, precision: number): CompiledQuery {
  return ackQuery(ctx, spec, lease.id, now, { lease, precision });
}

/** `update "t" set "locked_until" = null[, "retry_after" = $1] where "id" = $2 and "locked_until" = $3`. */
export function settleLeaseRetry(spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery {
  return leaseRetryQuery(ctx, spec, lease, retryAt, precision);
}

/** `delete from "t" where ("locked_until" = $1 and "id" in ($2, …)) or … returning "id"` (or `update … set "processed_at"` with the same check): the returned ids are the acks that took. */
export function settleLeaseAckMany(spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): CompiledQuery<RawRow> {
  return ackManyQuery(ctx, spec, leases, now, precision);
}

/** `select "id" from "t" where ("locked_until" = $1 and "id" in ($2, …)) or … for update`. */
export function selectHeldLeases(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  return selectHeldQuery(ctx, spec, leases, precision, true);
}

/** `update "t" set "locked_until" = null, "attempt" = "attempt" - 1 where ("locked_until" = $1 and "id" in ($2, …)) or … returning "id"`. */
export function releaseUnstartedLeases(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  return releaseUnstartedQuery(ctx, spec, leases, precision);
}

export const postgresLease: LeaseStatements = Object.freeze({
  claim: claimLeased,
  selectClaimable: selectLeaseClaimable,
  stampClaimed: stampLeaseClaimed,
  extend: extendLeases,
  readLeases,
  settleAck: settleLeaseAck,
  settleRetry: settleLeaseRetry,
  settleAckMany: settleLeaseAckMany,
  selectHeld: selectHeldLeases,
  releaseUnstarted: releaseUnstartedLeases,
});
