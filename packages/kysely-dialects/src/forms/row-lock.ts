import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import { notForTable, notOnEngine } from "../shared/no-statement.js";
import { stampPickedQuery, uncountPickedQuery } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { lockFifoGroupQuery } from "../statements/fifo-head.js";
import { fifoRuleApplies, orderedKey } from "../statements/order-key-head.js";
import { compiled } from "../statements/query-db.js";
import { lockOrderKeysQuery } from "../statements/order-key-lock.js";
import { ackQuery, ackWithResultQuery, lockedAckManyQuery, lockedRetryQuery, lockedSnoozeQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes, Whole } from "../statements/shapes.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * The row-lock form (Postgres, MySQL/MariaDB). Run inside one transaction per delivery: the
 * runtime opens it (`claimIsolation`), runs `claim` (then `countAttempts` where the claim does not
 * count them itself: `countsInClaim`), hands the row to the handler, runs a settlement and commits.
 * On an engine without row locks (`capabilities.rowLock` false: SQLite) every statement of the
 * group refuses with `UnsupportedForm`.
 */
export interface RowLockStatements {
  /**
   * The claim counts the attempt in its own statement and returns the rows as counted (Postgres,
   * with `UPDATE … RETURNING`). False: the claim is a locking select that returns the rows as they
   * were, and `countAttempts` counts them after it, in the same transaction (MySQL/MariaDB).
   */
  readonly countsInClaim: boolean;
  /**
   * A fifo claim locks its group in its own statement (Postgres). False: `lockFifoGroup` runs first
   * in the claim's transaction, and its row count goes to the claim as `fifoLocked` (MySQL/MariaDB).
   */
  readonly claimLocksFifoGroup: boolean;
  /**
   * The order-key locks (`lockOrderKeys`) are the session's and outlive the transaction (MySQL/MariaDB
   * user locks): `releaseOrderKeys` runs just before it ends. False: its end gives them back (Postgres).
   */
  readonly orderKeyLocksOutliveTransaction: boolean;
  /**
   * Fifo where the claim cannot lock its group itself (`claimLocksFifoGroup` false): `SELECT id … FOR
   * UPDATE SKIP LOCKED` of the group's rows that hold or may take its head, run first in the claim's
   * transaction. Only for a table whose fifo rule applies (`fifoRuleApplies`: fifo, without `perKey`).
   */
  lockFifoGroup(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /**
   * Select claimable rows `FOR UPDATE SKIP LOCKED`; where `countsInClaim`, it also counts the attempt and returns the new value.
   * A fifo table: the group's head only — Postgres locks the group in this statement; MySQL/MariaDB
   * read the head without a lock after `lockFifoGroup`, whose row count goes in `fifoLocked`.
   */
  claim(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /** Counts an attempt for claimed rows, in the claim's transaction: where the claim does not (`countsInClaim` false), on a table with an attempt column. */
  countAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery;
  /**
   * Takes the counted attempt back for claimed rows never handed to a handler, in the claim's
   * transaction, which then commits with the other rows' settlements (a shared claim stopped with
   * rows still buffered). At least one id, on a table with an attempt column.
   */
  uncountAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery;
  /**
   * Ordered keys (an order key, or a group with `perKey`: `orderedKey`): takes, for each claimed row,
   * the first of `slots` of its key free of other transactions, without waiting; the rows come back
   * with the slot taken in `order_slot`, NULL when all were held (the row must not run: another row
   * of its key is in work). Rows of one statement have distinct keys.
   */
  lockOrderKeys(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">, ids: readonly unknown[], slots: readonly number[]): CompiledQuery<Record<string, unknown>>;
  /** Gives back the order-key locks of the transaction's session, run just before it ends (commit or rollback), where they outlive it (`orderKeyLocksOutliveTransaction`). */
  releaseOrderKeys(): CompiledQuery;
  /** Ack: delete the row, or mark `processedAt`. */
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  /** Ack writing the handler's result (JSON text) with processedAt, in one statement, in the claim's transaction. */
  settleAckWithResult(spec: InboxDescription, id: unknown, now: Date, result: string): CompiledQuery;
  /**
   * Ack of many rows the transaction holds (a shared claim's), in one statement: delete them, or mark
   * `processedAt`. At least one id; the caller keeps each statement within the engine's parameter limit.
   * Where the engine can (`capabilities.heldRowsAckTogether`); elsewhere each row acks with `settleAck`.
   */
  settleAckMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery;
  /**
   * Retry at a later time: the row stays (its attempt stays counted), hidden until `retryAt` in the
   * retryAfter column. A retry at once writes nothing: the transaction's end gives the row back.
   */
  settleRetry(spec: InboxDescription, id: unknown, retryAt: Date): CompiledQuery;
  /**
   * Snooze, in the claim's transaction: `retryAt` in the retryAfter column (where it has one) and the
   * attempt the claim counted given back (`attempt - 1`), which commits with the settlement. A table
   * with neither column has nothing to write: the caller writes nothing.
   */
  settleSnooze(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery;
}

/**
 * The row-lock form: the claim transaction holds the rows while handlers run. On an engine
 * without `FOR UPDATE SKIP LOCKED` (SQLite), where a row-lock table is `UnsupportedForm`, every
 * statement refuses.
 *
 * The claim counts the attempt in the same transaction, so a rollback (a crash) un-counts it:
 * in the claim itself where the engine claims in one statement (the rows carry the attempt after
 * counting), otherwise by `countAttempts` after a locking select (the rows carry it before).
 */
export function rowLockStatements(engine: EngineTraits): RowLockStatements {
  const locks = engine.orderKeyLocks;
  if (!engine.capabilities.rowLock || locks === "no row-lock form") return refusedRowLock(engine);
  const ctx = engine.statements;
  const oneStatement = engine.oneStatementClaim === "select then stamp" ? undefined : engine.oneStatementClaim;
  const release = locks.release;
  // Compiled once per shape: a delivery runs a claim and a settlement.
  const shapes = new StatementShapes(ctx);
  const attemptOf = (spec: InboxDescription, statement: string): string => spec.attempt?.name ?? notForTable(statement, "it has no attempt column", { table: spec.table });
  return Object.freeze({
    countsInClaim: oneStatement !== undefined,
    claimLocksFifoGroup: oneStatement !== undefined,
    orderKeyLocksOutliveTransaction: release !== "with the transaction",
    lockFifoGroup: (spec: InboxDescription, options: ClaimOptions) => lockFifoGroupQuery(ctx, spec, options, oneStatement !== undefined),
    claim(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
      // Without an attempt column there is nothing to write: the locking select is the claim
      // (a fifo claim keeps its one statement, which locks the group: see fifo-head.ts).
      if (oneStatement !== undefined && (spec.attempt !== undefined || fifoRuleApplies(spec, options)))
        return shapes.fill(spec, claimShapeKey("claim", options), claimValues(options), (c, v) => oneStatement(c, spec, claimOptionsOf(v, options), null));
      return shapes.fill(spec, claimShapeKey("select", options), claimValues(options), (c, v) =>
        compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock: "skip locked" })),
      );
    },
    countAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery {
      if (oneStatement !== undefined) notOnEngine(ctx.capabilities.engine, "rowLock.countAttempts", "the claim counts the attempt itself (rowLock.countsInClaim)");
      attemptOf(spec, "rowLock.countAttempts");
      return shapes.fill(spec, `count|${ids.length}`, { ids }, (c, v) => stampPickedQuery(c, spec, v.ids, null));
    },
    lockOrderKeys(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">, ids: readonly unknown[], slots: readonly number[]) {
      if (orderedKey(spec, options) === undefined) notForTable("rowLock.lockOrderKeys", "it has no ordered key (an order key, or a group with perKey)", { table: spec.table });
      return shapes.fill(spec, `lockKeys|${ids.length}|${slots.join(",")}`, { ids }, (c, v) => lockOrderKeysQuery(c, locks, spec, options, v.ids, slots) as CompiledQuery<RawRow>);
    },
    releaseOrderKeys: (): CompiledQuery =>
      release === "with the transaction"
        ? notOnEngine(
            ctx.capabilities.engine,
            "rowLock.releaseOrderKeys",
            "the transaction's end gives the order-key locks back (rowLock.orderKeyLocksOutliveTransaction is false)",
          )
        : release,
    uncountAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery {
      if (ids.length === 0) throw new RangeError("uncountAttempts: no ids");
      return uncountPickedQuery(ctx, spec, ids, attemptOf(spec, "rowLock.uncountAttempts"));
    },
    settleAck: (spec: InboxDescription, id: unknown, now: Date) => shapes.fill(spec, "ack", { id, now }, (c, v) => ackQuery(c, spec, v.id, v.now)),
    settleAckWithResult: (spec: InboxDescription, id: unknown, now: Date, result: string) => ackWithResultQuery(ctx, spec, id, now, result),
    settleAckMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery {
      if (!ctx.capabilities.heldRowsAckTogether)
        notOnEngine(ctx.capabilities.engine, "rowLock.settleAckMany", "held rows ack one by one (capabilities.heldRowsAckTogether is false)");
      if (ids.length === 0) throw new Error("settleAckMany: no ids to ack");
      const whole = ctx.capabilities.arrayParameters;
      return shapes.fill(spec, whole ? "ackMany" : `ackMany|${ids.length}`, { ids: whole ? new Whole(ids) : ids, now }, (c, v) => lockedAckManyQuery(c, spec, v.ids, v.now));
    },
    settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date) => shapes.fill(spec, "retry", { id, retryAt }, (c, v) => lockedRetryQuery(c, spec, v.id, v.retryAt)),
    settleSnooze: (spec: InboxDescription, id: unknown, retryAt: Date | null) => lockedSnoozeQuery(ctx, spec, id, retryAt),
  });
}

/** An engine without row locks: every statement refuses, naming the capability. */
function refusedRowLock(engine: EngineTraits): RowLockStatements {
  const refuse = (statement: string) => (): never =>
    notOnEngine(engine.capabilities.engine, `rowLock.${statement}`, "it has no row locks (capabilities.rowLock is false), so no row-lock form");
  return Object.freeze({
    countsInClaim: false,
    claimLocksFifoGroup: false,
    orderKeyLocksOutliveTransaction: false,
    lockFifoGroup: refuse("lockFifoGroup"),
    claim: refuse("claim"),
    countAttempts: refuse("countAttempts"),
    uncountAttempts: refuse("uncountAttempts"),
    lockOrderKeys: refuse("lockOrderKeys"),
    releaseOrderKeys: refuse("releaseOrderKeys"),
    settleAck: refuse("settleAck"),
    settleAckWithResult: refuse("settleAckWithResult"),
    settleAckMany: refuse("settleAckMany"),
    settleRetry: refuse("settleRetry"),
    settleSnooze: refuse("settleSnooze"),
  });
}
