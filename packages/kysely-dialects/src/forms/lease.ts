import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, HeldLease, LeaseClaimOptions, LeaseStatements, RawRow } from "../types.js";
import { stampPickedQuery } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { lockFifoGroupQuery } from "../statements/fifo-head.js";
import { ackManyQuery, releaseUnstartedQuery, selectHeldQuery } from "../statements/held-leases.js";
import { extendQuery, readLeasesQuery } from "../statements/lease-extend.js";
import { compiled } from "../statements/query-db.js";
import { ackQuery, leaseRetryQuery } from "../statements/settle.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * The lease form, on every engine: the deadline in the row is the token of ownership, and every
 * settlement and extension matches it. What differs by engine is read from its traits: the
 * one-statement claim (absent on MySQL/MariaDB: `selectClaimable` then `stampClaimed`), whether
 * selects lock what they read (`rowLock`), and whether writes return ids (`updateReturning`).
 */
export function leaseStatements(engine: EngineTraits): LeaseStatements {
  const ctx = engine.statements;
  const oneStatement = engine.oneStatementClaim;
  const lock = engine.capabilities.rowLock ? "skip locked" : "none";
  return Object.freeze({
    claim: oneStatement === null ? () => null : (spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow> => oneStatement(spec, options, options),
    lockFifoGroup: (spec: InboxDescription, options: ClaimOptions) => lockFifoGroupQuery(ctx, spec, options, oneStatement !== null),
    selectClaimable: (spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> => compiled(selectClaimableQuery(ctx, spec, options, { lock })),
    stampClaimed: (spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number) => stampPickedQuery(ctx, spec, ids, { until, precision }),
    extend: (spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number) => extendQuery(ctx, spec, leases, { until, precision }),
    readLeases: (spec: InboxDescription, ids: readonly unknown[]) => readLeasesQuery(ctx, spec, ids),
    settleAck: (spec: InboxDescription, lease: HeldLease, now: Date, precision: number) => ackQuery(ctx, spec, lease.id, now, { lease, precision }),
    settleRetry: (spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number) => leaseRetryQuery(ctx, spec, lease, retryAt, precision),
    settleAckMany: (spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number) => ackManyQuery(ctx, spec, leases, now, precision),
    selectHeld: (spec: InboxDescription, leases: readonly HeldLease[], precision: number) => selectHeldQuery(ctx, spec, leases, precision),
    releaseUnstarted: (spec: InboxDescription, leases: readonly HeldLease[], precision: number) => releaseUnstartedQuery(ctx, spec, leases, precision),
  });
}
