import { advisoryKeyOf, type AdvisoryStatements, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import { missingTableError, ownStatementsOn } from "../../drivers/database.js";
import { lockSessionLost } from "../../errors.js";
import { errorFields } from "../../logger.js";
import { commitsHandlerWrites, type Settlement } from "../settlement.js";
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
import { type CapPlace, MaxInWork } from "../cap/max-in-work.js";
import { AdvisoryBatchClaim, CANDIDATES_PER_WORKER, MIN_CANDIDATES } from "./advisory-batch-claim.js";
import { AdvisoryLocks, type KeyHold } from "./advisory-locks.js";
import { CandidateWindow, type SetAside } from "./candidate-window.js";
import { holdConnection, type HeldConnection } from "./held-connection.js";
import { abandonUnstarted, HeldDelivery, heldSettlement, type HoldingForm } from "./held-delivery.js";

/** One claim round: the keys it tried, the rows it took and set aside, and the connection (with a cap slot) it holds for the next take. */
class Round {
  readonly tried = new Set<string>();
  readonly claimed: ClaimedDelivery[] = [];
  aside: SetAside[] = [];
  spare: HeldConnection | undefined;
  slot: CapPlace | undefined;
  /** The cap refused a slot: the round ends. */
  full = false;

  constructor(readonly limit: number) {}

  wants(): boolean {
    return this.claimed.length < this.limit && !this.full;
  }

  /** The spare connection and its slot go to a take's row (or to be given back): the round holds neither any more. */
  handOver(): { readonly connection: HeldConnection | undefined; readonly slot: CapPlace | undefined } {
    const held = { connection: this.spare, slot: this.slot };
    this.spare = undefined;
    this.slot = undefined;
    return held;
  }
}

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
 * Candidates come from a window read for several rounds (`CandidateWindow`); the keys and their
 * locks are `AdvisoryLocks`'; a cap (`maxInWork`) holds one slot lock per row (`SlotLocks`).
 *
 * A transactional handler writes in a transaction on the lock's session: an ack writes the
 * settlement inside it and commits, then unlocks; any other outcome rolls it back first.
 *
 * With `batch(n)` above 1 where locks live in the session, and neither a transactional handler nor
 * a cap (each needs a row's session to itself), claims take their rows together on one session:
 * `AdvisoryBatchClaim`.
 */
export class AdvisoryClaim implements ClaimStrategy {
  readonly profile: ClaimProfile;
  readonly #setup: ClaimSetup;
  /** Claims lock their keys together, on one session per claim; absent where each row needs its session alone. */
  readonly #batches: AdvisoryBatchClaim | undefined;
  readonly #statements: AdvisoryStatements;
  readonly #locks: AdvisoryLocks;
  readonly #window = new CandidateWindow();
  readonly #cap: MaxInWork | undefined;
  /** How a delivery's key lock is given back or settled on. */
  readonly #holding: HoldingForm<KeyHold>;

  constructor(setup: ClaimSetup) {
    this.#setup = setup;
    this.#statements = setup.database.dialect.advisory;
    this.#locks = new AdvisoryLocks(setup);
    // Row by row where a row needs its session alone: a handler's transaction runs on it, or a cap's slot lock is taken with the key.
    const batched = this.#locks.sessionLocks && (setup.batch ?? 1) > 1 && setup.transactional !== true && setup.capSlots === undefined;
    // A claimed row holds its key's session at once (none where the process holds the keys: SQLite);
    // a batch claim's rows share one session, which stays open until the last of them ends.
    this.profile = profileOf(setup, {
      pace: batched ? "shared" : "perWorker",
      claimsSideBySide: setup.database.dialect.capabilities.rowLock,
      connectionsPerDelivery: this.#locks.sessionLocks ? 1 : 0,
    });
    const cap = setup.capSlots === undefined ? undefined : new MaxInWork(this.#locks.capOf(setup.capSlots));
    this.#cap = cap;
    if (cap !== undefined) this.atCap = () => cap.atCap();
    this.#holding = {
      held: "key",
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
      abandon: (d, started) => {
        // A batch row that never started gives its attempt back on the session before its key is unlocked.
        const session = d.hold.session;
        const release = session !== undefined && !started && this.#batches !== undefined ? this.#batches.leave(session, d) : this.#release(d.hold);
        release.catch((error: unknown) => this.#setup.logger.warn({ ...errorFields(error), ...d.place }, "advisory unlock at shutdown failed; the lock ends with its session"));
      },
      // A batch row whose session ended while it waited for a worker: its key is free, so another claim may run it.
      lapsed: (d) => d.hold.session?.lost === true,
      committed: (d) => setup.followUp?.committed(d.id),
      settle: (d, settlement) => this.#settle(d, settlement),
      // On the key's session, where no handler's transaction holds it (its writes would show only at its commit): a lost session fails the write.
      // A single writer's one connection is the handler's transaction's: the value shows when it commits.
      writeProgress: async (d, progress) => {
        const { database, spec } = this.#setup;
        const tx = d.handlerTransaction;
        const via = tx === undefined ? d.hold.connection : database.dialect.capabilities.singleWriter ? tx : undefined;
        const write = () => database.execute("settle", this.#statements.writeProgress(spec, d.id, progress), via);
        // A batch's session runs one statement at a time: between its settlements.
        await (d.hold.session === undefined ? write() : d.hold.session.run(write));
      },
      // Where there are no session locks (SQLite) the pool's one connection carries it.
      openHandlerTransaction: (d) => {
        const connection = d.hold.connection;
        // A transactional queue's claims hold their session with a Kysely on it (`holdConnection(…, true)`).
        const on = connection === undefined ? this.#setup.database.appDb : connection.kysely;
        if (on === undefined) return Promise.reject(new Error("an advisory lock session held without a Kysely cannot open a handler's transaction"));
        return this.#setup.database.activity.track(() => on.startTransaction().execute());
      },
    };
    this.#batches = batched ? new AdvisoryBatchClaim(setup, this.#locks, this.#window, (row, hold) => this.#delivery(row, hold)) : undefined;
  }

  /** Batch claims' sessions still open, one connection each (the pacer keeps them within `workers`). */
  get heldTransactions(): number {
    return this.#batches?.open ?? 0;
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
    this.#window.invalidate();
  }

  /**
   * One claim round: takes candidates from the front of the window, in claim order, until `limit`
   * rows are taken. The window is read once for several rounds; when it runs out before `limit`
   * it is read again once, so a stale window never makes a claim come back short while rows wait.
   */
  async claim(limit: number): Promise<ClaimedDelivery[]> {
    if (this.#batches !== undefined) return this.#batches.claim(limit);
    const round = new Round(limit);
    // The lock names' database is read (once) before a connection is held for lock tries.
    if (this.#locks.sessionLocks) await this.#locks.lockDatabase();
    try {
      for (let pass = 0; pass < 2 && round.wants(); pass++) {
        const read = pass > 0 || !this.#window.fresh(this.#setup.clock.now().getTime());
        if (read && !(await this.#readWindowOrCut(round, Math.max(limit * CANDIDATES_PER_WORKER, MIN_CANDIDATES)))) return round.claimed;
        for (let row = this.#window.next(); row !== undefined; row = round.wants() ? this.#window.next() : undefined) {
          if (!(await this.#tryRow(round, row))) return round.claimed;
        }
        // A fresh read is all this round can see: read again next round, not now.
        if (read) break;
      }
    } finally {
      const { connection, slot } = round.handOver();
      await this.#locks.dropSpare(connection, this.#cap, slot);
      this.#window.giveBack(round.aside);
    }
    // A short claim the cap did not cut: the queue had no more rows to take.
    this.#cap?.ended({ wanted: limit, room: round.full ? round.claimed.length : limit, taken: round.claimed.length, kept: round.claimed.length });
    return round.claimed;
  }

  /**
   * `#readWindow`, in a round that may have taken rows already: a read that fails then (its session
   * lost) ends the round with them — they are held on their own sessions and must be delivered, or
   * their keys would stay held in this process with no delivery to end them. False when it ended.
   */
  async #readWindowOrCut(round: Round, size: number): Promise<boolean> {
    try {
      await this.#readWindow(round, size);
      return true;
    } catch (error) {
      if (round.claimed.length === 0) throw error;
      this.#setup.logger.warn({ ...errorFields(error), claimed: round.claimed.length }, "advisory claim round cut short; the rows taken so far are delivered");
      return false;
    }
  }

  /** Reads a new window of `size` candidates; no connection is held meanwhile (the pool budget counts one per worker, plus one). */
  async #readWindow(round: Round, size: number): Promise<void> {
    this.#window.giveBack(round.aside);
    round.aside = [];
    const { connection, slot } = round.handOver();
    await this.#locks.dropSpare(connection, this.#cap, slot);
    const { database, spec, clock } = this.#setup;
    const now = clock.now();
    const options = { limit: size, now, ...groupOf(this.#setup), ...excludedBy(this.#setup) };
    await this.#window.read(now.getTime(), async () => (await database.execute("claim", this.#statements.selectCandidates(spec, options))).rows as RawRow[]);
  }

  /**
   * Tries one candidate: passes it over when its key is in work (or was tried, or set aside), else
   * locks its key, with a cap slot first, and takes it. False when the round ends here: a failure
   * after rows were taken (they are delivered; an error with none taken is thrown).
   */
  async #tryRow(round: Round, row: RawRow): Promise<boolean> {
    const { spec, parked } = this.#setup;
    const keys = this.#locks.keys;
    // Parked after the window was read (a delay with no column for it): the take would not see it.
    if (parked !== undefined && parked.size > 0 && parked.has(row[spec.id.name])) return true;
    const key = advisoryKeyOf(spec, row);
    if (round.tried.has(key) || keys.has(key) || this.#window.asideKey(key)) {
      round.aside.push(this.#window.setAside(row, key)); // a later row of a key waits for the earlier one
      return true;
    }
    round.tried.add(key);
    keys.hold(key);
    try {
      // A transactional handler's `ctx.tx` opens on this session, from the app's Kysely (plugins and all).
      if (this.#locks.sessionLocks) round.spare ??= await holdConnection(this.#setup.database.appDb, this.#setup.transactional === true);
      if (this.#cap !== undefined && round.slot === undefined) round.slot = (await this.#cap.take(this.#locks.run("claim", round.spare), 1))[0];
      // Every slot of the cap is held, or another session works on this key: the row stays, first of its key, for a later claim.
      const taken = this.#cap !== undefined && round.slot === undefined ? "cap full" : await this.#locks.take(row, key, round.spare);
      if (taken === "cap full" || taken === "held elsewhere") {
        keys.drop(key);
        round.aside.push(this.#window.setAside(row, key));
        round.full = taken === "cap full";
        return true;
      }
      const { connection, slot } = round.handOver();
      if (taken !== "gone") round.claimed.push(this.#delivery(taken, { key, connection, slot }));
      // Unlocked before the key is free again in this process: a claim side by side would
      // otherwise find the lock still held and set its row aside as held elsewhere.
      else await this.#release({ key, connection, slot });
      return true;
    } catch (error) {
      keys.drop(key);
      this.#window.giveBack(round.aside);
      round.aside = [];
      this.invalidate();
      // The lock may have been taken before the failure: unlock it; the failed session is
      // closed, never pooled again (`@sqlinbox/database`'s drivers/session-guard.ts), so no pooled session keeps it.
      const { connection, slot } = round.handOver();
      await this.#locks.unlock(connection, key, this.#cap, slot).catch(() => false);
      // Rows taken earlier in this round are held on their own sessions: hand them on, or
      // their keys and connections would stay held with no delivery to end them.
      if (round.claimed.length === 0) throw error;
      this.#setup.logger.warn({ ...errorFields(error), claimed: round.claimed.length }, "advisory claim round cut short; the rows taken so far are delivered");
      return false;
    }
  }

  /** A delivery of the row as its take returned it (never the candidate, which may predate a retry of the same row). */
  #delivery(row: RawRow, hold: KeyHold): ClaimedDelivery {
    const { spec } = this.#setup;
    const id = row[spec.id.name];
    return new HeldDelivery(this.#holding, row, id, deliveredAttempt(spec, row), deliveryPlace(this.#setup, id), hold);
  }

  /** Unlocks the delivery's key (and its cap slot) and forgets it in this process; true when the session still held the lock. */
  async #release(hold: KeyHold): Promise<boolean> {
    try {
      if (hold.session !== undefined) return await hold.session.unlock(hold.key);
      return await this.#locks.unlock(hold.connection, hold.key, this.#cap, hold.slot);
    } finally {
      this.#locks.keys.drop(hold.key);
    }
  }

  async #settle(delivery: HeldDelivery<KeyHold>, settlement: Settlement): Promise<void> {
    if (delivery.hold.session !== undefined && this.#batches !== undefined) return this.#batches.settle(delivery, settlement, delivery.hold.session);
    const { database, spec, clock, deadLetter, followUp } = this.#setup;
    const { hold, id, place, attempt } = delivery;
    const followed = followUp?.wants(settlement) === true;
    const connection = hold.connection;
    const handlerTx = delivery.handlerTransaction;
    delivery.handlerTransaction = undefined;
    let stillHeld: boolean;
    try {
      const queries = heldSettlement(this.#statements, spec, id, settlement, clock.now(), { deadLetters: database.dialect.deadLetter, target: deadLetter, attempt, place });
      if (handlerTx !== undefined && commitsHandlerWrites(settlement)) {
        // In the handler's transaction, on the lock's session: its writes and the ack commit together.
        const run = <R>(query: CompiledQuery<R>) => database.activity.track(() => ownStatementsOn(handlerTx).executeQuery(query) as Promise<QueryResult<R>>);
        for (const query of queries) await run(query);
        if (followed) await followUp.run(run, id, settlement);
        await database.activity.track(() => handlerTx.commit().execute());
      } else {
        if (handlerTx !== undefined) await handlerTx.rollback().execute();
        // On the delivery's own session: once that session is gone, so is the lock, and the
        // row may already be in another delivery — the settlement must fail, not land.
        // A follow-up (a workflow step's release) joins the settlement in one transaction on that session.
        await this.#locks.writeOn(connection, queries, followed ? (run) => followUp.run(run, id, settlement) : undefined);
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
      throw missingTableError(database.dialect, error, place) ?? lockSessionLost(settlement.outcome.kind, error, place);
    }
    if (!stillHeld) this.#setup.logger.warn({ ...place }, "the key's lock was no longer held at settlement");
  }
}
