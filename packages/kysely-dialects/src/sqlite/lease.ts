import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, HeldLease, LeaseClaimOptions, LeaseStatements, RawRow } from "../types.js";
import { col, selectClaimableQuery } from "../shared/claimable.js";
import { extendQuery, readLeasesQuery, stampClaimedQuery, stampValues } from "../shared/lease-writes.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, leaseRetryQuery } from "../shared/settlement.js";
import { ackManyQuery, releaseUnstartedQuery, selectHeldQuery } from "../shared/lease-batch.js";
import { sqliteContext as ctx } from "./query-builder.js";

/**
 * Lease claim in one statement:
 *
 * ```sql
 * update "t" set "locked_until" = ?, "attempt" = "attempt" + 1
 * where "id" in (select "t"."id" from "t" where ("t"."locked_until" is null or "t"."locked_until" <= ?) … order by … limit ?)
 * returning …
 * ```
 *
 * SQLite runs one writer at a time, so the subquery and the update see the same rows and
 * no lock clause is needed. RETURNING does not keep the claim order: sort the rows if it matters.
 */
export function claimLeased(spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow> {
  const picked = selectClaimableQuery(ctx, spec, options, false, [col(spec, spec.id.name)]);
  return compiled(
    ctx.db
      .updateTable(spec.table)
      .set(stampValues(ctx, spec, options.until, options.precision))
      .where(spec.id.name, "in", () => picked)
      .returning(spec.columns.map((c) => c.name)),
  );
}

/** `select … from "t" where <claimable> order by … limit ?` (no lock clause: run it in `BEGIN IMMEDIATE`). */
export function selectLeaseClaimable(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, false));
}

/** `update "t" set "locked_until" = ?, "attempt" = "attempt" + 1 where "id" in (?, …)`. */
export function stampLeaseClaimed(spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number): CompiledQuery {
  return stampClaimedQuery(ctx, spec, ids, until, precision);
}

/** `update "t" set "locked_until" = ? where ("id" = ? and "locked_until" = ?) or … returning "id"`. */
export function extendLeases(spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number): CompiledQuery<RawRow> {
  return extendQuery(ctx, spec, leases, until, precision, true);
}

/** `select "id", "locked_until" from "t" where "id" in (?, …)`. */
export function readLeases(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow> {
  return readLeasesQuery(ctx, spec, ids);
}

/** `delete from "t" where "id" = ? and "locked_until" = ?` (or `update … set "processed_at" = ?` with the same check). */
export function settleLeaseAck(spec: InboxDescription, lease: HeldLease, now: Date, precision: number): CompiledQuery {
  return ackQuery(ctx, spec, lease.id, now, { lease, precision });
}

/** `update "t" set "locked_until" = null[, "retry_after" = ?] where "id" = ? and "locked_until" = ?`. */
export function settleLeaseRetry(spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery {
  return leaseRetryQuery(ctx, spec, lease, retryAt, precision);
}

/** `delete from "t" where ("locked_until" = ? and "id" in (?, …)) or … returning "id"` (or `update … set "processed_at"` with the same check): the returned ids are the acks that took. */
export function settleLeaseAckMany(spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): CompiledQuery<RawRow> {
  return ackManyQuery(ctx, spec, leases, now, precision);
}

/** `select "id" from "t" where ("locked_until" = ? and "id" in (?, …)) or …`. */
export function selectHeldLeases(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  return selectHeldQuery(ctx, spec, leases, precision, false);
}

/** `update "t" set "locked_until" = null, "attempt" = "attempt" - 1 where ("locked_until" = ? and "id" in (?, …)) or … returning "id"`. */
export function releaseUnstartedLeases(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  return releaseUnstartedQuery(ctx, spec, leases, precision);
}

export const sqliteLease: LeaseStatements = Object.freeze({
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

