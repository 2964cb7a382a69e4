import { advisoryKeyOf, type AdvisoryStatements, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery } from "kysely";
import { missingTableError, ownStatementsOn, type AnyTransaction, type OwnStatementSession } from "../../drivers/database.js";
import { lockSessionLost } from "../../errors.js";
import { errorFields } from "../../logger.js";
import type { HandlerOutcome } from "../../declare/outcome.js";
import { commitsHandlerWrites } from "../settlement.js";
import {
  deliveredAttempt,
  deliveryPlace,
  excludedBy,
  groupOf,
  type ClaimedDelivery,
  type ClaimSetup,
  type ClaimStrategy,
  type ClaimProfile,
  profileOf,
} from "../claim-strategy.js";
import { SessionTransaction } from "./claim-transaction.js";
import { holdConnection, type HeldConnection } from "./held-connection.js";
import { abandonUnstarted, HeldDelivery, heldSettlement, type HoldingForm } from "./held-delivery.js";

/**
 * The keys of deliveries in work in this process, per database. On Postgres and MySQL it
 * spares a connection for a key this process already holds; on SQLite, where there are no
 * session locks, it *is* the lock — which is why one SQLite file serves one process.
 */
const keysInWork = new Set<string>();
let scopes = 0;
/** `maxInWork` slots taken in this process where locks live in the process (SQLite): per database and cap. */
const capSlotsInProcess = new Map<string, number>();

/** A candidate a claim set aside, with its key and the window it came from. */
interface PassedRow {
  readonly row: RawRow;
  readonly key: string;
  readonly generation: number;
}

/** What an advisory delivery holds: its key's lock, on its own session where locks are per session. */
interface KeyHold {
  readonly key: string;
  /** The key as registered in `keysInWork`. */
  readonly registered: string;
  readonly connection: HeldConnection | undefined;
  /** The `maxInWork` slot the delivery holds (a slot lock on its session, or an entry in this process). */
  readonly slot?: string | undefined;
}

/** Candidates read per claim round, per free worker: enough to reach past keys already in work. */
const CANDIDATES_PER_WORKER = 8;
const MIN_CANDIDATES = 64;
/**
 * How long a window of candidates serves later claims before it is read again. Within it, a
 * candidate another session finished costs a lock try (and a take that finds nothing), never a
 * wrong delivery: the take re-checks the row. A publish in this process drops the window, so a
 * new row that ranks first is not passed over.
 */
const CANDIDATE_WINDOW_MS = 250;

/**
 * The advisory form (every engine): a row is held by a lock on its key, taken on a
 * connection of its own that the delivery keeps until it settles.
 *
 * ```sql
 * SELECT … FROM t WHERE <claimable> ORDER BY … LIMIT :window     -- candidates, no lock
 * SELECT pg_try_advisory_lock(hashtextextended(:key, 0))          -- Postgres, or GET_LOCK(:db.key, 0)
 * UPDATE t SET attempt = attempt + 1 WHERE id = ? AND <claimable>  -- the take, committed at once,
 *   RETURNING …                                                   -- the row as counted (or read back
 *                                                                  -- on this session: MySQL/MariaDB)
 * -- the handler runs; the key stays locked by this session
 * DELETE FROM t WHERE id = ?  | UPDATE … retry_after                -- the settlement, same session
 * SELECT pg_advisory_unlock(…)                                     -- or RELEASE_LOCK
 * ```
 *
 * Only the first candidate of each key is tried in a round, so rows sharing a key run one at
 * a time in claim order, while other keys run in parallel. The lock ends with its session, so
 * a crash returns the row at once; the take was committed, so the crash spends the attempt.
 *
 * A transactional handler writes in a transaction on the lock's session: an ack writes the
 * settlement inside it and commits, then unlocks; any other outcome rolls it back first.
 */
export class AdvisoryClaim implements ClaimStrategy {
  readonly profile: ClaimProfile;
  readonly heldTransactions = 0;
  readonly #setup: ClaimSetup;
  readonly #statements: AdvisoryStatements;
  readonly #sessionLocks: boolean;
  readonly #scope: string;
  #databaseName: Promise<string> | undefined;
  /**
   * The candidate window, shared by this subscription's claims: rows read by one select, in claim
   * order, taken from the front one at a time (claims side by side never try the same row).
   * Read again when empty, or older than `CANDIDATE_WINDOW_MS`; `#reading` is a read under way,
   * which claims that find the window empty wait for instead of reading the same rows again.
   */
  #window: RawRow[] = [];
  #windowAt = 0;
  #windowReadAt = 0;
  #windowGeneration = 0;
  #reading: Promise<void> | undefined;
  /** Each candidate's place in claim order across reads, so rows given back go back in order. */
  readonly #rank = new WeakMap<RawRow, number>();
  #ranked = 0;
  /** Keys with a row set aside by a claim under way: their later rows are set aside too, so a key's rows run in claim order. */
  readonly #passedKeys = new Map<string, number>();
  /** How a delivery's key lock is given back or settled on. */
  readonly #holding: HoldingForm<KeyHold>;
  /** `maxInWork`: the last claim found every slot held. */
  #atCap = false;

  constructor(setup: ClaimSetup) {
    this.#setup = setup;
    this.#statements = setup.database.dialect.advisory;
    this.#sessionLocks = setup.database.dialect.capabilities.advisoryLocks === "session";
    // A claimed row holds its key's session at once (none where the process holds the keys: SQLite).
    this.profile = profileOf(setup, { pace: "perWorker", claimsSideBySide: setup.database.dialect.capabilities.rowLock, connectionsPerDelivery: this.#sessionLocks ? 1 : 0 });
    // Session locks already keep processes and pools apart: the registry only spares this
    // subscription a connection. Without them (SQLite) it is the lock, shared by the process.
    this.#scope = this.#sessionLocks ? `subscription:${++scopes}` : `database:${setup.databaseLabel ?? ""}`;
    if (setup.capSlots !== undefined) this.atCap = () => this.#atCap;
    this.#holding = {
      held: "key",
      spec: setup.spec,
      clock: setup.clock,
      parked: setup.parked,
      isClosed: setup.isClosed,
      // An abandoned delivery unlocked its key already; after a close the key is unlocked now,
      // so the session goes back and the pool can close.
      closedBeforeSettle: (d) =>
        d.abandoned
          ? Promise.resolve()
          : this.#release(d.hold).then(
              () => undefined,
              () => undefined,
            ),
      abandon: (d) => {
        this.#release(d.hold).catch((error: unknown) =>
          this.#setup.logger.warn({ ...errorFields(error), ...d.place }, "advisory unlock at shutdown failed; the lock ends with its session"),
        );
      },
      settle: (d, outcome) => this.#settle(d, outcome),
      // Where there are no session locks (SQLite) the pool's one connection carries it.
      openHandlerTransaction: (d) => {
        const connection = d.hold.connection;
        // A transactional queue's claims hold their session with a Kysely on it (`holdConnection(…, true)`).
        const on = connection === undefined ? this.#setup.database.appDb : connection.kysely;
        if (on === undefined) return Promise.reject(new Error("an advisory lock session held without a Kysely cannot open a handler's transaction"));
        return this.#setup.database.activity.track(() => on.startTransaction().execute());
      },
    };
  }

  start(): void {}
  stop(): void {
    this.invalidate();
  }

  /** A delivery claimed but never started (the app stopped first) unlocks its key: the row is back at once (its attempt was counted by the take). */
  readonly releaseUnstarted = abandonUnstarted;

  /** `maxInWork`: the last claim found every slot held; absent without a cap (nothing asked on a delivery's end). */
  readonly atCap?: () => boolean;

  /** A publish in this process: the next claim reads candidates afresh (the new row may rank first). */
  invalidate(): void {
    this.#window = [];
    this.#windowAt = 0;
    this.#windowGeneration++;
  }

  /** True while the window has rows not handed out and is younger than `CANDIDATE_WINDOW_MS`. */
  #windowFresh(): boolean {
    return this.#windowAt < this.#window.length && this.#setup.clock.now().getTime() - this.#windowReadAt < CANDIDATE_WINDOW_MS;
  }

  /** Reads a new window of `size` candidates, or waits for the read already under way. */
  async #readWindow(size: number): Promise<void> {
    if (this.#reading !== undefined) return this.#reading;
    const { database, spec, clock } = this.#setup;
    const read = (async () => {
      const now = clock.now();
      const rows = (await database.execute("claim", this.#statements.selectCandidates(spec, { limit: size, now, ...groupOf(this.#setup), ...excludedBy(this.#setup) })))
        .rows as RawRow[];
      for (const row of rows) this.#rank.set(row, ++this.#ranked);
      this.#window = rows;
      this.#windowAt = 0;
      this.#windowReadAt = now.getTime();
      this.#windowGeneration++;
    })();
    this.#reading = read;
    try {
      await read;
    } finally {
      this.#reading = undefined;
    }
  }

  /** Sets a row aside for the rest of the round: its key is in work, or an earlier row of its key is set aside or was tried. */
  #pass(passed: PassedRow[], row: RawRow, key: string): void {
    passed.push({ row, key, generation: this.#windowGeneration });
    this.#passedKeys.set(key, (this.#passedKeys.get(key) ?? 0) + 1);
  }

  /** Puts rows a claim set aside back into the window, in claim order (by their rank). */
  #giveBack(passed: readonly PassedRow[]): void {
    if (passed.length === 0) return;
    const back: RawRow[] = [];
    for (const { row, key, generation } of passed) {
      const left = (this.#passedKeys.get(key) ?? 1) - 1;
      if (left === 0) this.#passedKeys.delete(key);
      else this.#passedKeys.set(key, left);
      // A row of an older window is dropped: the newer read holds every row still claimable, in
      // claim order, and giving this one back could put a key's later row before its earlier one.
      if (generation === this.#windowGeneration) back.push(row);
    }
    if (back.length === 0) return;
    const rank = (r: RawRow) => this.#rank.get(r) ?? 0;
    this.#window = [...back, ...this.#window.slice(this.#windowAt)].sort((x, y) => rank(x) - rank(y));
    this.#windowAt = 0;
  }

  /**
   * One claim round: takes candidates from the front of the window, in claim order, until `limit`
   * rows are taken. The window is read once for several rounds; when it runs out before `limit`
   * it is read again once, so a stale window never makes a claim come back short while rows wait.
   */
  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const { database, spec, parked } = this.#setup;
    const size = Math.max(limit * CANDIDATES_PER_WORKER, MIN_CANDIDATES);
    const tried = new Set<string>();
    const claimed: ClaimedDelivery[] = [];
    // One connection tries keys until a lock is taken; it then belongs to that delivery.
    let spare: HeldConnection | undefined;
    // Rows passed over (a later row of a key in work): back to the window's front when the round ends.
    let passed: PassedRow[] = [];
    // `maxInWork`: the cap slot taken for the next take, held with `spare` (on its session) until a row takes it.
    let slot: string | undefined;
    const capped = this.#setup.capSlots !== undefined;
    let full = false;
    // The lock names' database is read (once) before a connection is held for lock tries.
    if (this.#sessionLocks) await this.#database();
    try {
      for (let pass = 0; pass < 2 && claimed.length < limit && !full; pass++) {
        const read = pass > 0 || !this.#windowFresh();
        if (read) {
          this.#giveBack(passed);
          passed = [];
          // No connection is held while the window is read: the pool budget counts one per worker, plus one.
          if (slot === undefined) spare?.release();
          else await this.#dropSpare(spare, slot);
          spare = undefined;
          slot = undefined;
          await this.#readWindow(size);
        }
        while (claimed.length < limit && this.#windowAt < this.#window.length) {
          const row = this.#window[this.#windowAt++] as RawRow;
          // Parked after the window was read (a delay with no column for it): the take would not see it.
          if (parked !== undefined && parked.size > 0 && parked.has(row[spec.id.name])) continue;
          const key = advisoryKeyOf(spec, row);
          const registered = `${this.#scope}\u0000${key}`;
          if (tried.has(key) || keysInWork.has(registered) || this.#passedKeys.has(key)) {
            this.#pass(passed, row, key); // a later row of a key waits for the earlier one
            continue;
          }
          tried.add(key);
          keysInWork.add(registered);
          try {
            // A transactional handler's `ctx.tx` opens on this session, from the app's Kysely (plugins and all).
            if (this.#sessionLocks) spare ??= await holdConnection(database.appDb, this.#setup.transactional === true);
            if (capped && slot === undefined) {
              slot = await this.#takeSlot(spare);
              if (slot === undefined) {
                // Every slot of the cap is held: the row stays, first of its key, for a later claim.
                keysInWork.delete(registered);
                this.#pass(passed, row, key);
                full = true;
                this.#atCap = true;
                break;
              }
            }
            const taken = await this.#take(row, key, spare);
            if (taken === "held elsewhere") {
              // Another session works on this key: the row stays, first of its key, for a later round.
              keysInWork.delete(registered);
              this.#pass(passed, row, key);
              continue;
            }
            const connection = spare;
            const heldSlot = slot;
            spare = undefined;
            slot = undefined;
            if (taken === "gone") {
              // Unlocked before the key is free again in this process: a claim side by side would
              // otherwise find the lock still held and set its row aside as held elsewhere.
              try {
                await this.#unlock(connection, key, heldSlot);
              } finally {
                keysInWork.delete(registered);
              }
              continue;
            }
            claimed.push(this.#delivery(taken, key, registered, connection, heldSlot));
          } catch (error) {
            keysInWork.delete(registered);
            this.#giveBack(passed);
            passed = [];
            this.invalidate();
            // The lock may have been taken before the failure: unlock it; the failed session is
            // closed, never pooled again (drivers/session-guard.ts), so no pooled session keeps it.
            const connection = spare;
            const heldSlot = slot;
            spare = undefined;
            slot = undefined;
            await this.#unlock(connection, key, heldSlot).catch(() => false);
            // Rows taken earlier in this round are held on their own sessions: hand them on, or
            // their keys and connections would stay held with no delivery to end them.
            if (claimed.length === 0) throw error;
            this.#setup.logger.warn({ ...errorFields(error), claimed: claimed.length }, "advisory claim round cut short; the rows taken so far are delivered");
            return claimed;
          }
        }
        // A fresh read is all this round can see: read again next round, not now.
        if (read) break;
      }
    } finally {
      if (slot === undefined) spare?.release();
      else await this.#dropSpare(spare, slot);
      this.#giveBack(passed);
    }
    // A short claim the cap did not cut: the queue had no more rows to take.
    if (capped && !full && claimed.length < limit) this.#atCap = false;
    return claimed;
  }

  /**
   * `maxInWork(n)`: one of the cap's `n` slots for the next take: a slot lock on `connection`'s
   * session (tried without waiting, from a random slot on), which ends with the session, so a
   * crash gives it back at once; or, where locks live in the process (SQLite, one process per
   * file), a count in this process. `undefined` when every slot is held.
   */
  async #takeSlot(connection: HeldConnection | undefined): Promise<string | undefined> {
    const cap = this.#setup.capSlots;
    if (cap === undefined) return undefined;
    if (connection === undefined) {
      const registered = `${this.#scope}\u0000${cap.place.name}`;
      const held = capSlotsInProcess.get(registered) ?? 0;
      if (held >= cap.n) return undefined;
      capSlotsInProcess.set(registered, held + 1);
      return registered;
    }
    const database = await this.#database();
    const first = Math.floor(Math.random() * cap.n);
    for (let i = 0; i < cap.n; i++) {
      const slot = `${cap.place.name}:${(first + i) % cap.n}`;
      const lock = this.#statements.tryLock(slot, database);
      if (lock === null) return slot;
      if (Number((await this.#setup.database.execute("claim", lock, connection)).rows[0]?.locked ?? 0) === 1) return slot;
    }
    return undefined;
  }

  /** Gives a cap slot back: unlocks it on its session (before the session goes back to the pool), or counts it out of this process. */
  async #releaseSlot(connection: HeldConnection | undefined, slot: string | undefined): Promise<void> {
    if (slot === undefined) return;
    if (connection === undefined) {
      const held = (capSlotsInProcess.get(slot) ?? 1) - 1;
      if (held <= 0) capSlotsInProcess.delete(slot);
      else capSlotsInProcess.set(slot, held);
      return;
    }
    const unlock = this.#statements.unlock(slot, await this.#database());
    if (unlock !== null) await this.#setup.database.execute("settle", unlock as CompiledQuery<Record<string, unknown>>, connection);
  }

  /** The round's spare connection goes back to the pool, its cap slot unlocked first. */
  async #dropSpare(spare: HeldConnection | undefined, slot: string | undefined): Promise<void> {
    try {
      await this.#releaseSlot(spare, slot);
    } finally {
      spare?.release();
    }
  }

  /**
   * Locks the key on `connection` and takes the row (attempt + 1, committed): the row as the take
   * counted it, read back by the take itself (`RETURNING`) or on the session that holds the key.
   */
  async #take(candidate: RawRow, key: string, connection: HeldConnection | undefined): Promise<RawRow | "held elsewhere" | "gone"> {
    const { database, spec, clock } = this.#setup;
    if (connection !== undefined) {
      const lock = this.#statements.tryLock(key, await this.#database());
      const locked = lock === null ? true : Number((await database.execute("claim", lock, connection)).rows[0]?.locked ?? 0) === 1;
      if (!locked) return "held elsewhere";
    }
    const id = candidate[spec.id.name];
    const taken = await database.execute("claim", this.#statements.take(spec, id, clock.now()), connection);
    const readBack = this.#statements.readTaken(spec, id);
    // Zero rows: finished by another session between the candidate read and the lock.
    if (readBack === null) return taken.rows[0] ?? "gone";
    if (Number(taken.numAffectedRows ?? 0n) === 0) return "gone";
    // The key's lock keeps every other take off the row: this read sees what this take counted.
    return (await database.execute("claim", readBack, connection)).rows[0] ?? "gone";
  }

  /** The database name MySQL lock names are prefixed with (user locks are server-wide). */
  /** The lock names' database: the table's own (its schema) when named, so every process agrees on it, else the connection's. */
  #database(): Promise<string> {
    const { database, spec } = this.#setup;
    if (spec.schema !== undefined) return Promise.resolve(spec.schema);
    if (this.#databaseName !== undefined) return this.#databaseName;
    const name = database.execute("claim", database.dialect.schema.currentDatabase()).then((r) => String(r.rows[0]?.name ?? ""));
    this.#databaseName = name;
    // A read that failed (a lost connection) is read again next time, not remembered.
    name.catch(() => {
      if (this.#databaseName === name) this.#databaseName = undefined;
    });
    return name;
  }

  /** Releases the key's lock (and the cap slot) and gives the connection back; true when the session still held the lock. */
  async #unlock(connection: HeldConnection | undefined, key: string, slot?: string): Promise<boolean> {
    // Uncapped deliveries hold no slot: no statement and no await for one.
    if (connection === undefined) {
      if (slot !== undefined) await this.#releaseSlot(undefined, slot);
      return true;
    }
    try {
      if (slot !== undefined) await this.#releaseSlot(connection, slot);
      const unlock = this.#statements.unlock(key, await this.#database());
      if (unlock === null) return true;
      const result = await this.#setup.database.execute("settle", unlock as CompiledQuery<Record<string, unknown>>, connection);
      const row = result.rows[0];
      return row !== undefined && Number(Object.values(row)[0]) === 1;
    } finally {
      connection.release();
    }
  }

  /** A delivery of the row as its take returned it (never the candidate, which may predate a retry of the same row). */
  #delivery(row: RawRow, key: string, registered: string, connection: HeldConnection | undefined, slot: string | undefined): ClaimedDelivery {
    const { spec } = this.#setup;
    const id = row[spec.id.name];
    const attempt = deliveredAttempt(spec, row);
    return new HeldDelivery(this.#holding, row, id, attempt, deliveryPlace(this.#setup, id), { key, registered, connection, slot });
  }

  /** Unlocks the delivery's key and forgets it in this process; true when the session still held the lock. */
  async #release(hold: KeyHold): Promise<boolean> {
    try {
      return await this.#unlock(hold.connection, hold.key, hold.slot);
    } finally {
      keysInWork.delete(hold.registered);
    }
  }

  async #settle(delivery: HeldDelivery<KeyHold>, outcome: HandlerOutcome): Promise<void> {
    const { database, spec, clock, deadLetter } = this.#setup;
    const { hold, id, place, attempt } = delivery;
    const connection = hold.connection;
    const handlerTx = delivery.handlerTransaction;
    delivery.handlerTransaction = undefined;
    let stillHeld: boolean;
    try {
      const queries = heldSettlement(this.#statements, spec, id, outcome, clock.now(), { deadLetters: database.dialect.deadLetter, target: deadLetter, attempt, place });
      if (handlerTx !== undefined && commitsHandlerWrites(outcome)) {
        // In the handler's transaction, on the lock's session: its writes and the ack commit together.
        for (const query of queries) await database.activity.track(() => ownStatementsOn(handlerTx).executeQuery(query));
        await database.activity.track(() => handlerTx.commit().execute());
      } else {
        if (handlerTx !== undefined) await handlerTx.rollback().execute();
        // On the delivery's own session: once that session is gone, so is the lock, and the
        // row may already be in another delivery — the settlement must fail, not land.
        // A move is two statements: one transaction on that session.
        if (queries.length === 1) await database.execute("settle", queries[0] as CompiledQuery, connection);
        else if (queries.length > 1) {
          const move = async (trx: OwnStatementSession | AnyTransaction) => {
            for (const query of queries) await database.execute("settle", query, trx);
          };
          // SQLite holds no session of its own: the pool's one connection carries the move.
          await (connection === undefined ? database.db.transaction().execute(move) : SessionTransaction.within(connection, database.dialect.transaction, move));
        }
      }
      stillHeld = await this.#release(hold);
    } catch (error) {
      if (handlerTx !== undefined && !handlerTx.isCommitted && !handlerTx.isRolledBack)
        await handlerTx
          .rollback()
          .execute()
          .catch(() => undefined);
      await this.#release(hold).catch(() => false);
      // The session may be fine: a missing table is its own cause.
      throw missingTableError(database.dialect, error, place) ?? lockSessionLost(outcome.kind, error, place);
    }
    if (!stillHeld) this.#setup.logger.warn({ ...place }, "the key's lock was no longer held at settlement");
  }
}
