import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, HeldLease, LeaseClaimOptions, RawRow } from "../types.js";
import { notOnEngine } from "../shared/no-statement.js";
import { stampPickedQuery } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { lockFifoGroupQuery } from "../statements/fifo-head.js";
import { ackManyQuery, heldShape, releaseUnstartedQuery, selectHeldQuery } from "../statements/held-leases.js";
import { extendQuery, readLeasesQuery } from "../statements/lease-extend.js";
import { fifoRuleApplies, selectCrowdedQuery } from "../statements/order-key-head.js";
import { col, compiled } from "../statements/query-db.js";
import { ackQuery, ackWithResultQuery, leaseRetryQuery, leaseSnoozeQuery, progressQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes } from "../statements/shapes.js";
import type { EngineTraits } from "./engine-traits.js";

/** The lease form (every engine). Each statement commits on its own unless said otherwise. */
export interface LeaseStatements {
  /**
   * The claim is one statement (`claim`: Postgres, SQLite). False: two, in one short transaction:
   * `selectClaimable`, then `stampClaimed`, after `lockFifoGroup` on a fifo table (MySQL/MariaDB,
   * which have no `UPDATE … RETURNING`).
   */
  readonly claimsInOneStatement: boolean;
  /**
   * One statement that claims: sets the deadline, counts the attempt, returns the rows
   * (Postgres: a CTE that picks `FOR UPDATE SKIP LOCKED`, then `UPDATE … RETURNING`; SQLite: an
   * update of the ids a subquery picks, with `RETURNING`). Where `claimsInOneStatement`.
   */
  claim(spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow>;
  /**
   * Fifo where the claim is two statements (`claimsInOneStatement` false): `SELECT id … FOR UPDATE SKIP
   * LOCKED` of the group's rows that hold or may take its head, run first in the claim's transaction;
   * its row count goes to the claim as `fifoLocked`. Only for a table whose fifo rule applies (`fifoRuleApplies`).
   */
  lockFifoGroup(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /** `SELECT … FOR UPDATE SKIP LOCKED` of claimable rows (the first half of a two-statement claim). */
  selectClaimable(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /**
   * Whether a claim would find a row: the id of the first claimable row (`LIMIT 1`), read without a
   * lock and outside a transaction, so one round trip. An idle subscription runs it in place of a
   * two-statement claim's transaction (three round trips), and claims only once it returns a row. Not for a
   * fifo table, whose head rule counts the rows the claim's transaction locked.
   */
  probeClaimable(spec: InboxDescription, options: Omit<ClaimOptions, "limit">): CompiledQuery<RawRow>;
  /** Writes the deadline and counts the attempt on the selected rows (the second half). */
  stampClaimed(spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number): CompiledQuery;
  /** Moves every lease in `leases` to `until` in one statement; each row only while it still holds its token. Returns the extended ids where the engine can. */
  extend(spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number): CompiledQuery<RawRow>;
  /** Reads the current deadlines of `ids` (to tell which extensions took where `extend` returns nothing). */
  readLeases(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow>;
  /** Ack while the lease is held: delete, or mark `processedAt`. Zero rows affected: the lease was lost. */
  settleAck(spec: InboxDescription, lease: HeldLease, now: Date, precision: number): CompiledQuery;
  /** Ack while the lease is held, writing the handler's result (JSON text) with processedAt in the same statement. Zero rows affected: the lease was lost, and no result is written. */
  settleAckWithResult(spec: InboxDescription, lease: HeldLease, now: Date, result: string, precision: number): CompiledQuery;
  /** Writes progress (JSON text) while the lease is held, fenced by its token like an extension. Zero rows affected: the lease was lost. */
  writeProgress(spec: InboxDescription, lease: HeldLease, progress: string, precision: number): CompiledQuery;
  /** Release while held: `locked_until = NULL` (or `retryAt` in the retryAfter column / the lease column), attempt not counted again. */
  settleRetry(spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery;
  /** Snooze while held: `settleRetry`'s release and, in the same statement, the claim's attempt given back (`attempt - 1`). */
  settleSnooze(spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery;
  /**
   * Ack of many leases in one statement, each row only while it still holds its token: a delete
   * (or a processedAt update) whose condition has one arm per distinct token with its list of ids.
   * Where the engine has `updateReturning`, `RETURNING id` names the acks that took. Elsewhere
   * (MySQL/MariaDB) run `selectHeld` first in one short transaction: the ids it returns are the
   * acks that take; every other lease was lost.
   */
  settleAckMany(spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): CompiledQuery<RawRow>;
  /** The ids of the leases still held, their rows locked until commit (`FOR UPDATE`; no lock clause on SQLite). */
  selectHeld(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow>;
  /**
   * Gives back claimed rows no handler received: `locked_until = NULL` and the claim's attempt
   * undone (`attempt = attempt - 1`), each row only while it holds its token; `RETURNING id` where the engine can.
   */
  releaseUnstarted(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow>;
  /**
   * Ordered keys (an order key, or a group with `perKey`: `orderedKey`), after a claim has committed:
   * of the rows it took (`ids`), those whose key holds `perKey` or more other unprocessed rows with a
   * lease live at `now`. Claims that ran side by side can each miss the other's lease (each reads the
   * leases committed when it began); the later to commit sees the other's here.
   */
  selectCrowded(spec: InboxDescription, options: Pick<ClaimOptions, "perKey" | "now">, ids: readonly unknown[]): CompiledQuery<RawRow>;
}

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
    claimsInOneStatement: oneStatement !== "select then stamp",
    claim:
      oneStatement === "select then stamp"
        ? () => notOnEngine(ctx.capabilities.engine, "lease.claim", "it claims in two statements, selectClaimable then stampClaimed (lease.claimsInOneStatement is false)")
        : (spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow> =>
            shapes.fill(spec, `${claimShapeKey("claim", options)}|${options.precision}`, { ...claimValues(options), until: options.until }, (c, v) =>
              oneStatement(c, spec, claimOptionsOf(v, options), { until: v.until, precision: options.precision }),
            ),
    selectClaimable: (spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> =>
      shapes.fill(spec, claimShapeKey("select", options), claimValues(options), (c, v) => compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock }))),
    probeClaimable: (spec: InboxDescription, options: Omit<ClaimOptions, "limit">): CompiledQuery<RawRow> => {
      // A fifo table's head rule needs the count of rows the claim's transaction locked: the runtime does not probe those.
      if (fifoRuleApplies(spec, options)) notOnEngine(ctx.capabilities.engine, "lease.probeClaimable", "a fifo table's claim counts the group's locked rows first (lockFifoGroup)");
      const probe = { ...options, limit: 1 };
      return shapes.fill(spec, claimShapeKey("probe", probe), claimValues(probe), (c, v) =>
        compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock: "none", columns: [col(spec, spec.id.name)] })),
      );
    },
    stampClaimed: (spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number) =>
      shapes.fill(spec, `stamp|${ids.length}|${precision}`, { ids, until }, (c, v) => stampPickedQuery(c, spec, v.ids, { until: v.until, precision })),
    lockFifoGroup: (spec: InboxDescription, options: ClaimOptions) => lockFifoGroupQuery(ctx, spec, options, oneStatement !== "select then stamp"),
    extend: (spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number) => extendQuery(ctx, spec, leases, { until, precision }),
    readLeases: (spec: InboxDescription, ids: readonly unknown[]) => readLeasesQuery(ctx, spec, ids),
    settleAck: (spec: InboxDescription, lease: HeldLease, now: Date, precision: number) => ackQuery(ctx, spec, lease.id, now, { lease, precision }),
    settleAckWithResult: (spec: InboxDescription, lease: HeldLease, now: Date, result: string, precision: number) =>
      ackWithResultQuery(ctx, spec, lease.id, now, result, { lease, precision }),
    writeProgress: (spec: InboxDescription, lease: HeldLease, progress: string, precision: number) => progressQuery(ctx, spec, lease.id, progress, { lease, precision }),
    settleRetry: (spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number) => leaseRetryQuery(ctx, spec, lease, retryAt, precision),
    settleSnooze: (spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number) => leaseSnoozeQuery(ctx, spec, lease, retryAt, precision),
    settleAckMany: (spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number) =>
      heldShape(shapes, ctx, spec, `ack|${precision}`, leases, { now }, (c, groups, at) => ackManyQuery(c, spec, groups, at as Date, precision)),
    selectHeld: (spec: InboxDescription, leases: readonly HeldLease[], precision: number) =>
      heldShape(shapes, ctx, spec, `held|${precision}`, leases, {}, (c, groups) => selectHeldQuery(c, spec, groups, precision)),
    selectCrowded: (spec: InboxDescription, options: Pick<ClaimOptions, "perKey" | "now">, ids: readonly unknown[]) => selectCrowdedQuery(ctx, spec, options, ids),
    releaseUnstarted: (spec: InboxDescription, leases: readonly HeldLease[], precision: number) =>
      heldShape(shapes, ctx, spec, `release|${precision}`, leases, {}, (c, groups) => releaseUnstartedQuery(c, spec, groups, precision)),
  });
}
