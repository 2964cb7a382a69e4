import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import { notForTable, notOnEngine } from "../shared/no-statement.js";
import { takeManyQuery, takenRowQuery, takenRowsQuery, takeQuery } from "../statements/advisory-take.js";
import { uncountPickedQuery } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { compiled } from "../statements/query-db.js";
import { ackQuery, ackWithResultQuery, lockedAckManyQuery, lockedRetryQuery, lockedSnoozeQuery, progressQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes, Whole } from "../statements/shapes.js";
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
  take(spec: InboxDescription, id: unknown, now: Date, group?: string): CompiledQuery<RawRow>;
  /** Reads a taken row back on the session holding its key, its attempt as the take counted it; where the take returns nothing (`takeReturnsRow` false). */
  readTaken(spec: InboxDescription, id: unknown): CompiledQuery<RawRow>;
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  /**
   * A batch claim: tries every key's lock in one statement on the batch's session, one column per key
   * (`"i"` answers for `keys[i]`; taken: true or 1). The keys must be distinct: a session that locks a
   * key twice holds it twice. Where locks live in the session.
   */
  tryLockMany(keys: readonly string[], database: string): CompiledQuery<RawRow>;
  /** Releases the keys' locks in one statement, one column per key (`"i"`: `keys[i]` was held). Where locks live in the session. */
  unlockMany(keys: readonly string[], database: string): CompiledQuery<RawRow>;
  /**
   * Takes the rows whose keys the batch's session locked, in one statement: counts each attempt while
   * the row is still claimable. Returns the rows as counted where `takeReturnsRow`; elsewhere
   * `readTakenMany` reads them back (with `now` the take was given).
   */
  takeMany(spec: InboxDescription, ids: readonly unknown[], now: Date, group?: string): CompiledQuery<RawRow>;
  /** Reads back the rows a `takeMany` counted, on the session holding their keys; where the take returns nothing (`takeReturnsRow` false). */
  readTakenMany(spec: InboxDescription, ids: readonly unknown[], now: Date, group?: string): CompiledQuery<RawRow>;
  /** Acks rows whose keys one session holds, in one statement (deleted, or marked with processedAt). */
  settleAckMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery;
  /** Takes back the attempt a batch take counted for rows never handed to a handler, while their keys are still held. */
  uncountMany(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery;
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

/** A take's shape key, with or without the group's condition. */
function groupShape(group: string | undefined): string {
  return group === undefined ? "" : "|g";
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
  // A list of ids is one array parameter where the engine takes them (one text for every length).
  const whole = ctx.capabilities.arrayParameters;
  const idsOf = (ids: readonly unknown[]): readonly unknown[] | Whole<unknown> => (whole ? new Whole(nonEmpty(ids, "advisory")) : nonEmpty(ids, "advisory"));
  return Object.freeze({
    takeReturnsRow,
    selectCandidates: (spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> =>
      shapes.fill(spec, claimShapeKey("candidates", options), claimValues(options), (c, v) =>
        compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock: "none" })),
      ),
    tryLock: locks === "process registry" ? refuse("tryLock") : (key: string, database: string) => locks.tryLock(key, database),
    unlock: locks === "process registry" ? refuse("unlock") : (key: string, database: string) => locks.unlock(key, database),
    tryLockMany: locks === "process registry" ? refuse("tryLockMany") : (keys: readonly string[], database: string) => locks.tryLockMany(distinct(keys), database),
    unlockMany: locks === "process registry" ? refuse("unlockMany") : (keys: readonly string[], database: string) => locks.unlockMany(keys, database),
    takeMany: (spec: InboxDescription, ids: readonly unknown[], now: Date, group?: string) =>
      shapes.fill(spec, `${whole ? "takeMany" : `takeMany|${ids.length}`}${groupShape(group)}`, { ids: idsOf(ids), now, group }, (c, v) =>
        takeManyQuery(c, spec, v.ids, v.now, v.group),
      ),
    readTakenMany: takeReturnsRow
      ? () => notOnEngine(ctx.capabilities.engine, "advisory.readTakenMany", "the take returns the rows itself (advisory.takeReturnsRow)")
      : (spec: InboxDescription, ids: readonly unknown[], now: Date, group?: string) =>
          shapes.fill(spec, `${whole ? "takenMany" : `takenMany|${ids.length}`}${groupShape(group)}`, { ids: idsOf(ids), now, group }, (c, v) =>
            takenRowsQuery(c, spec, v.ids, v.now, v.group),
          ),
    settleAckMany: (spec: InboxDescription, ids: readonly unknown[], now: Date) =>
      shapes.fill(spec, whole ? "ackMany" : `ackMany|${ids.length}`, { ids: idsOf(ids), now }, (c, v) => lockedAckManyQuery(c, spec, v.ids, v.now)),
    uncountMany(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery {
      if (spec.attempt === undefined) return notForTable("advisory.uncountMany", "it has no attempt column", { table: spec.table });
      return uncountPickedQuery(ctx, spec, nonEmpty(ids, "advisory.uncountMany"), spec.attempt.name);
    },
    take: (spec: InboxDescription, id: unknown, now: Date, group?: string) =>
      shapes.fill(spec, `take${groupShape(group)}`, { id, now, group }, (c, v) => takeQuery(c, spec, v.id, v.now, v.group)),
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

/** The list as given, refused when empty (an empty `IN ()` is not SQL, and a batch of nothing is a caller's mistake). */
function nonEmpty<T>(ids: readonly T[], statement: string): readonly T[] {
  if (ids.length === 0) throw new RangeError(`${statement}: no ids`);
  return ids;
}

/** The keys as given, refused when one repeats: a session that locks a key twice holds it twice, and one unlock would not free it. */
function distinct(keys: readonly string[]): readonly string[] {
  if (keys.length === 0) throw new RangeError("advisory.tryLockMany: no keys");
  if (new Set(keys).size !== keys.length) throw new RangeError(`advisory.tryLockMany: a key is listed twice (${keys.join(", ")}); a batch tries one row per key`);
  return keys;
}
