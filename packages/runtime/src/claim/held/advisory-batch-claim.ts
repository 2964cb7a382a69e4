import { advisoryKeyOf, type AdvisoryStatements, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery } from "kysely";
import { missingTableError } from "../../drivers/database.js";
import { lockSessionLost } from "../../errors.js";
import { errorFields } from "../../logger.js";
import { excludedBy, groupOf, type ClaimedDelivery, type ClaimSetup } from "../claim-strategy.js";
import { batchedFinishOf, type Settlement } from "../settlement.js";
import type { AdvisoryLocks, Candidate, KeyHold } from "./advisory-locks.js";
import type { CandidateWindow, SetAside } from "./candidate-window.js";
import { holdConnection, type HeldConnection } from "./held-connection.js";
import { type HeldDelivery, heldSettlement } from "./held-delivery.js";
import { KeySession } from "./key-session.js";

/** Candidates read per claim, per row it may take: enough to reach past keys already in work. */
export const CANDIDATES_PER_WORKER = 8;
export const MIN_CANDIDATES = 64;

/**
 * The advisory form's batch claim (`batch(n)` above 1 where locks live in the session, unless a row
 * needs its session alone: a transactional handler, a cap's slot lock): picks up to `n` candidates
 * from the window, one per key and none of a key in work in this process, in claim order, then on
 * one session tries all their keys in one statement and takes the rows it locked in one more
 * (`AdvisoryLocks.takeMany`). The rows share the session (`KeySession`) until the last of them ends;
 * their settlements and unlocks are written together.
 *
 * ```sql
 * SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS "0", …    -- every picked key, one statement
 * UPDATE t SET attempt = attempt + 1 WHERE id = ANY($1) AND <claimable> RETURNING …   -- the locked rows
 * -- the handlers run; the rows share the session
 * DELETE FROM t WHERE id = ANY($1)                                   -- the acks that arrived together
 * SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS "0", …      -- and their keys
 * ```
 */
export class AdvisoryBatchClaim {
  readonly #setup: ClaimSetup;
  readonly #statements: AdvisoryStatements;
  readonly #locks: AdvisoryLocks;
  readonly #window: CandidateWindow;
  readonly #deliver: (row: RawRow, hold: KeyHold) => ClaimedDelivery;
  /** Sessions not yet given back. */
  #open = 0;
  /**
   * Rows a batch's session finished (or moved to the dead letter) since the window was last read: a
   * window read before their end still lists them, and a batch that picked them would find them gone.
   */
  readonly #ended = new Set<string>();

  constructor(setup: ClaimSetup, locks: AdvisoryLocks, window: CandidateWindow, deliver: (row: RawRow, hold: KeyHold) => ClaimedDelivery) {
    this.#setup = setup;
    this.#statements = setup.database.dialect.advisory;
    this.#locks = locks;
    this.#window = window;
    this.#deliver = deliver;
  }

  /** Sessions still open, one connection each (the pacer keeps them within `workers`). */
  get open(): number {
    return this.#open;
  }

  /** Nothing is delivered before the take ends, so a failure throws with nothing held. */
  async claim(limit: number): Promise<ClaimedDelivery[]> {
    // Every row picked was gone (the window was older than their end elsewhere): once more on a fresh read.
    const claimed = await this.#claimOnce(limit);
    if (claimed !== "all gone") return claimed;
    this.#window.invalidate();
    const again = await this.#claimOnce(limit);
    return again === "all gone" ? [] : again;
  }

  async #claimOnce(limit: number): Promise<ClaimedDelivery[] | "all gone"> {
    const tried = new Set<string>();
    const aside: SetAside[] = [];
    const picked: Candidate[] = [];
    const keys = this.#locks.keys;
    let connection: HeldConnection | undefined;
    let delivered = false;
    await this.#locks.lockDatabase();
    try {
      for (let pass = 0; pass < 2 && picked.length < limit; pass++) {
        const read = pass > 0 || !this.#window.fresh(this.#setup.clock.now().getTime());
        // The rows this subscription holds stay claimable until they end (up to `workers` batches): read past them.
        if (read) await this.#read(aside, Math.max(limit * CANDIDATES_PER_WORKER, MIN_CANDIDATES) + keys.size);
        for (let row = this.#window.next(); row !== undefined; row = picked.length < limit ? this.#window.next() : undefined) this.#pick(row, tried, aside, picked);
        if (read) break;
      }
      if (picked.length === 0) return [];
      connection = await holdConnection(this.#setup.database.appDb);
      const answers = await this.#locks.takeMany(picked, connection);
      const taken: Candidate[] = [];
      answers.forEach((answer, i) => {
        const { row, key } = picked[i] as Candidate;
        if (answer !== "held elsewhere" && answer !== "gone") taken.push({ row: answer, key });
        else {
          keys.drop(key);
          // Another session works on this key: the row stays, first of its key, for a later claim.
          if (answer === "held elsewhere") aside.push(this.#window.setAside(row, key));
        }
      });
      if (taken.length === 0) return answers.includes("gone") ? "all gone" : [];
      const session = this.#session(taken.length, connection);
      const on = connection;
      delivered = true;
      return taken.map(({ row, key }) => this.#deliver(row, { key, connection: on, session }));
    } catch (error) {
      this.#window.invalidate();
      // The keys may have been locked before the failure: unlocked, or the failed session is closed, never pooled again.
      if (connection !== undefined)
        await this.#locks
          .unlockMany(
            picked.map((c) => c.key),
            connection,
          )
          .catch(() => undefined);
      throw error;
    } finally {
      if (!delivered) {
        for (const { key } of picked) keys.drop(key);
        connection?.release();
      }
      this.#window.giveBack(aside);
    }
  }

  /** Reads a new window of `size` candidates, the rows set aside so far given back first; no connection is held meanwhile. */
  async #read(aside: SetAside[], size: number): Promise<void> {
    this.#window.giveBack(aside.splice(0));
    const { database, spec, clock } = this.#setup;
    const now = clock.now();
    const options = { limit: size, now, ...groupOf(this.#setup), ...excludedBy(this.#setup) };
    await this.#window.read(now.getTime(), async () => {
      // What ends from here on may be in the rows read: remembered until the next read.
      this.#ended.clear();
      return (await database.execute("claim", this.#statements.selectCandidates(spec, options))).rows as RawRow[];
    });
  }

  /** A candidate: picked when its key is free here and no earlier row of its key was passed over, else set aside. */
  #pick(row: RawRow, tried: Set<string>, aside: SetAside[], picked: Candidate[]): void {
    const { spec, parked } = this.#setup;
    const keys = this.#locks.keys;
    const id = row[spec.id.name];
    if (parked !== undefined && parked.size > 0 && parked.has(id)) return;
    if (this.#ended.size > 0 && this.#ended.has(String(id))) return;
    const key = advisoryKeyOf(spec, row);
    if (tried.has(key) || keys.has(key) || this.#window.asideKey(key)) {
      aside.push(this.#window.setAside(row, key)); // a later row of a key waits for the earlier one
      return;
    }
    tried.add(key);
    keys.hold(key);
    picked.push({ row, key });
  }

  /** The session a batch's `rows` share on `connection`: their ends written together, the connection back once all ended. */
  #session(rows: number, connection: HeldConnection): KeySession {
    const { database, spec, clock, logger } = this.#setup;
    this.#open++;
    return new KeySession(rows, {
      finishMany: (ids) => database.execute("settle", this.#statements.settleAckMany(spec, ids, clock.now()), connection),
      uncountMany: async (ids) => (spec.attempt === undefined ? undefined : database.execute("settle", this.#statements.uncountMany(spec, ids), connection)),
      unlockMany: (keys) => this.#locks.unlockMany(keys, connection),
      release: () => {
        this.#open--;
        connection.release();
      },
      warn: (error, message) => logger.warn({ ...errorFields(error) }, message),
      lost: (error, open) =>
        logger.warn(
          { ...errorFields(error), rows: open },
          "the session of an advisory batch ended: its keys are free and its rows back in the queue, attempt spent; the rows of the batch not started yet are not run here",
        ),
    });
  }

  /** A row that never reached a handler: its attempt taken back, then its key unlocked; forgotten here once unlocked. */
  async leave(session: KeySession, delivery: HeldDelivery<KeyHold>): Promise<boolean> {
    try {
      return await session.leave(delivery.id, delivery.hold.key);
    } finally {
      this.#locks.keys.drop(delivery.hold.key);
    }
  }

  /**
   * A row's settlement, on the batch's session: an ack or a drop joins the statement that finishes
   * the rows ending together; anything else writes its own statements first. Either way its key is
   * unlocked with theirs. A lost session fails it, as a row's own session would.
   */
  async settle(delivery: HeldDelivery<KeyHold>, settlement: Settlement, session: KeySession): Promise<void> {
    const { database, spec, clock, deadLetter, followUp } = this.#setup;
    const { hold, id, place, attempt } = delivery;
    // A follow-up (a workflow step's release) writes with its settlement in one transaction: never in a gathered ack.
    const followed = followUp?.wants(settlement) === true;
    let stillHeld: boolean;
    try {
      if (!followed && batchedFinishOf(settlement) !== undefined) {
        stillHeld = await session.finish(id, hold.key);
        this.#ended.add(String(id));
      } else {
        let queries: CompiledQuery[];
        try {
          queries = heldSettlement(this.#statements, spec, id, settlement, clock.now(), { deadLetters: database.dialect.deadLetter, target: deadLetter, attempt, place });
        } catch (error) {
          await session.unlock(hold.key).catch(() => false);
          throw error;
        }
        stillHeld =
          queries.length === 0 && !followed
            ? await session.unlock(hold.key)
            : await session.write(id, hold.key, () => this.#locks.writeOn(hold.connection, queries, followed ? (run) => followUp.run(run, id, settlement) : undefined));
        // Finished with a result, or moved: gone from the queue (a released row is claimable again, in its key's order).
        if (settlement.step.step !== "release") this.#ended.add(String(id));
      }
    } catch (error) {
      throw missingTableError(database.dialect, error, place) ?? lockSessionLost(settlement.outcome.kind, error, place);
    } finally {
      this.#locks.keys.drop(hold.key);
    }
    if (!stillHeld) this.#setup.logger.warn({ ...place }, "the key's lock was no longer held at settlement");
  }
}
