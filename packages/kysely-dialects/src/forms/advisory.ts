import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import { notOnEngine } from "../shared/no-statement.js";
import { takeQuery, takenRowQuery } from "../statements/advisory-take.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { compiled } from "../statements/query-db.js";
import { ackQuery, ackWithResultQuery, lockedRetryQuery, lockedSnoozeQuery, progressQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes } from "../statements/shapes.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * The advisory form (every engine). Where keys live in the server session
 * (`capabilities.advisoryLocks` is `"session"`), `tryLock` and `unlock` lock them; where they live in
 * the process (SQLite), the process's registry is the lock and those two refuse.
 */
export interface AdvisoryStatements {
  /**
   * The take returns the row as it counted it (`UPDATE … RETURNING`: no row, gone). False: the take
   * returns nothing, and `readTaken` reads the row back on the session holding its key (MySQL/MariaDB).
   */
  readonly takeReturnsRow: boolean;
  /** Claimable rows in claim order with the columns their keys need; no lock is taken. */
  selectCandidates(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /** Try the key's lock without waiting, on the delivery's own connection; returns one row `{ locked: 1 | 0 }`. Where locks live in the session. */
  tryLock(key: string, database: string): CompiledQuery<{ locked: unknown }>;
  /** Releases the key's lock. Where locks live in the session. */
  unlock(key: string, database: string): CompiledQuery;
  /**
   * Takes the row after its key was locked: counts the attempt, while the row is still claimable.
   * One row affected, or it is gone. Returns the row as counted where `takeReturnsRow` (no row:
   * gone); elsewhere `readTaken` reads it back.
   */
  take(spec: InboxDescription, id: unknown, now: Date): CompiledQuery<RawRow>;
  /** Reads a taken row back on the session holding its key, its attempt as the take counted it; where the take returns nothing (`takeReturnsRow` false). */
  readTaken(spec: InboxDescription, id: unknown): CompiledQuery<RawRow>;
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  /** Ack writing the handler's result (JSON text) with processedAt, in one statement, while the key is held. */
  settleAckWithResult(spec: InboxDescription, id: unknown, now: Date, result: string): CompiledQuery;
  /** Writes progress (JSON text) while the key is held; it commits at once, so other sessions see it. */
  writeProgress(spec: InboxDescription, id: unknown, progress: string): CompiledQuery;
  /** Retry at a later time: the row hidden until `retryAt` in the retryAfter column. A retry at once writes nothing: the unlock gives the row back. */
  settleRetry(spec: InboxDescription, id: unknown, retryAt: Date): CompiledQuery;
  /**
   * Snooze, on the session holding the key: `retryAt` in the retryAfter column (where it has one)
   * and the attempt the take counted given back (`attempt - 1`), before the unlock gives the row back.
   */
  settleSnooze(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery;
}

/**
 * The advisory form, on every engine: candidates are read without a lock (keys decide), each
 * key is locked without waiting on the delivery's own session, then the row is taken. Where
 * keys live in the process (SQLite) `tryLock` and `unlock` refuse.
 */
export function advisoryStatements(engine: EngineTraits): AdvisoryStatements {
  const ctx = engine.statements;
  const locks = engine.sessionLocks;
  const refuse = (statement: string) => (): never =>
    notOnEngine(ctx.capabilities.engine, `advisory.${statement}`, 'keys live in the process\'s registry (capabilities.advisoryLocks is "process")');
  // Compiled once per shape: every delivery runs a take and a settlement.
  const shapes = new StatementShapes(ctx);
  const takeReturnsRow = ctx.capabilities.updateReturning;
  return Object.freeze({
    takeReturnsRow,
    selectCandidates: (spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> =>
      shapes.fill(spec, claimShapeKey("candidates", options), claimValues(options), (c, v) =>
        compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock: "none" })),
      ),
    tryLock: locks === "process registry" ? refuse("tryLock") : (key: string, database: string) => locks.tryLock(key, database),
    unlock: locks === "process registry" ? refuse("unlock") : (key: string, database: string) => locks.unlock(key, database),
    take: (spec: InboxDescription, id: unknown, now: Date) => shapes.fill(spec, "take", { id, now }, (c, v) => takeQuery(c, spec, v.id, v.now)),
    readTaken: takeReturnsRow
      ? () => notOnEngine(ctx.capabilities.engine, "advisory.readTaken", "the take returns the row itself (advisory.takeReturnsRow)")
      : (spec: InboxDescription, id: unknown) => shapes.fill(spec, "taken", { id }, (c, v) => takenRowQuery(c, spec, v.id)),
    settleAck: (spec: InboxDescription, id: unknown, now: Date) => shapes.fill(spec, "ack", { id, now }, (c, v) => ackQuery(c, spec, v.id, v.now)),
    settleAckWithResult: (spec: InboxDescription, id: unknown, now: Date, result: string) => ackWithResultQuery(ctx, spec, id, now, result),
    writeProgress: (spec: InboxDescription, id: unknown, progress: string) => progressQuery(ctx, spec, id, progress),
    settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date) => shapes.fill(spec, "retry", { id, retryAt }, (c, v) => lockedRetryQuery(c, spec, v.id, v.retryAt)),
    settleSnooze: (spec: InboxDescription, id: unknown, retryAt: Date | null) => lockedSnoozeQuery(ctx, spec, id, retryAt),
  });
}
