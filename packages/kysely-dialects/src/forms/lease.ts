import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, HeldLease, LeaseClaimOptions, LeaseStatements, RawRow } from "../types.js";
import { stampPickedQuery } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { lockFifoGroupQuery } from "../statements/fifo-head.js";
import { ackManyQuery, heldShape, releaseUnstartedQuery, selectHeldQuery } from "../statements/held-leases.js";
import { extendQuery, readLeasesQuery } from "../statements/lease-extend.js";
import { selectCrowdedQuery } from "../statements/order-key-head.js";
import { compiled } from "../statements/query-db.js";
import { ackQuery, leaseRetryQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes } from "../statements/shapes.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * The lease form, on every engine: the deadline in the row is the token of ownership, and every
 * settlement and extension matches it. What differs by engine is read from its traits: the
 * one-statement claim (absent on MySQL/MariaDB: `selectClaimable` then `stampClaimed`), whether
 * selects lock what they read (`rowLock`), and whether writes return ids (`updateReturning`).
 * The statements a claim loop runs over and over (claims, acks) are compiled once per shape.
 */
export function leaseStatements(engine: EngineTraits): LeaseStatements {
  const ctx = engine.statements;
  const oneStatement = engine.oneStatementClaim;
  const lock = engine.capabilities.rowLock ? "skip locked" : "none";
  const shapes = new StatementShapes(ctx);
  return Object.freeze({
    claim:
      oneStatement === null
        ? () => null
        : (spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow> =>
            shapes.fill(spec, `${claimShapeKey("claim", options)}|${options.precision}`, { ...claimValues(options), until: options.until }, (c, v) =>
              oneStatement(c, spec, claimOptionsOf(v, options), { until: v.until, precision: options.precision }),
            ),
    selectClaimable: (spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> =>
      shapes.fill(spec, claimShapeKey("select", options), claimValues(options), (c, v) => compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock }))),
    stampClaimed: (spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number) =>
      shapes.fill(spec, `stamp|${ids.length}|${precision}`, { ids, until }, (c, v) => stampPickedQuery(c, spec, v.ids, { until: v.until, precision })),
    lockFifoGroup: (spec: InboxDescription, options: ClaimOptions) => lockFifoGroupQuery(ctx, spec, options, oneStatement !== null),
    extend: (spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number) => extendQuery(ctx, spec, leases, { until, precision }),
    readLeases: (spec: InboxDescription, ids: readonly unknown[]) => readLeasesQuery(ctx, spec, ids),
    settleAck: (spec: InboxDescription, lease: HeldLease, now: Date, precision: number) => ackQuery(ctx, spec, lease.id, now, { lease, precision }),
    settleRetry: (spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number) => leaseRetryQuery(ctx, spec, lease, retryAt, precision),
    settleAckMany: (spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number) =>
      heldShape(shapes, ctx, spec, `ack|${precision}`, leases, { now }, (c, groups, at) => ackManyQuery(c, spec, groups, at as Date, precision)),
    selectHeld: (spec: InboxDescription, leases: readonly HeldLease[], precision: number) =>
      heldShape(shapes, ctx, spec, `held|${precision}`, leases, {}, (c, groups) => selectHeldQuery(c, spec, groups, precision)),
    selectCrowded: (spec: InboxDescription, options: Pick<ClaimOptions, "perKey" | "now">, ids: readonly unknown[]) => selectCrowdedQuery(ctx, spec, options, ids),
    releaseUnstarted: (spec: InboxDescription, leases: readonly HeldLease[], precision: number) =>
      heldShape(shapes, ctx, spec, `release|${precision}`, leases, {}, (c, groups) => releaseUnstartedQuery(c, spec, groups, precision)),
  });
}
