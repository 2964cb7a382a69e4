import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, HeldLease, LeaseStatements, RawRow } from "../types.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { extendQuery, readLeasesQuery, stampClaimedQuery } from "../shared/lease-writes.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, leaseRetryQuery } from "../shared/settlement.js";
import { ackManyQuery, releaseUnstartedQuery, selectHeldQuery } from "../shared/lease-batch.js";
import { mysqlContext as ctx } from "./query-builder.js";

/**
 * No one-statement claim: neither MySQL nor MariaDB 10.6 has `UPDATE … RETURNING`.
 * The runtime runs `selectClaimable` then `stampClaimed` in one short transaction.
 */
export function claimLeased(): null {
  return null;
}

/**
 * ``select … from `t` where (`t`.`locked_until` is null or `t`.`locked_until` <= ?) … order by … limit ? for update skip locked``:
 * the first half of the claim; the rows carry the attempt *before* counting.
 */
export function selectLeaseClaimable(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, true));
}

/** ``update `t` set `locked_until` = ?, `attempt` = `attempt` + 1 where `id` in (?, …)``: the second half. */
export function stampLeaseClaimed(spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number): CompiledQuery {
  return stampClaimedQuery(ctx, spec, ids, until, precision);
}

/**
 * ``update `t` set `locked_until` = ? where (`id` = ? and `locked_until` = ?) or …``: no RETURNING,
 * so the affected count says how many took and `readLeases` says which.
 */
export function extendLeases(spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number): CompiledQuery<RawRow> {
  return extendQuery(ctx, spec, leases, until, precision, false);
}

/** ``select `id`, `locked_until` from `t` where `id` in (?, …)``. */
export function readLeases(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow> {
  return readLeasesQuery(ctx, spec, ids);
}

/** ``delete from `t` where `id` = ? and `locked_until` = ?`` (or ``update … set `processed_at` = ?`` with the same check). */
export function settleLeaseAck(spec: InboxDescription, lease: HeldLease, now: Date, precision: number): CompiledQuery {
  return ackQuery(ctx, spec, lease.id, now, { lease, precision });
}

/** ``update `t` set `locked_until` = null[, `retry_after` = ?] where `id` = ? and `locked_until` = ?``. */
export function settleLeaseRetry(spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery {
  return leaseRetryQuery(ctx, spec, lease, retryAt, precision);
}

/** ``delete from `t` where (`locked_until` = ? and `id` in (?, …)) or …`` (or ``update … set `processed_at` = ?`` with the same check): no RETURNING, so run `selectHeld` first in the same transaction to know which take. */
export function settleLeaseAckMany(spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): CompiledQuery<RawRow> {
  return ackManyQuery(ctx, spec, leases, now, precision);
}

/** ``select `id` from `t` where (`locked_until` = ? and `id` in (?, …)) or … for update``. */
export function selectHeldLeases(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  return selectHeldQuery(ctx, spec, leases, precision, true);
}

/** ``update `t` set `locked_until` = null, `attempt` = `attempt` - 1 where (`locked_until` = ? and `id` in (?, …)) or …``. */
export function releaseUnstartedLeases(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow> {
  return releaseUnstartedQuery(ctx, spec, leases, precision);
}

export const mysqlLease: LeaseStatements = Object.freeze({
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
