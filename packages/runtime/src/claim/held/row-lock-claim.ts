import type { ErrorPlace } from "@sqlinbox/core/internal";
import type { RawRow, RowLockStatements } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery } from "kysely";
import { isDeadlock, missingTableError } from "../../drivers/database.js";
import { noRowLocks, settlementDeadlockedTooOften, transactionLost } from "../../errors.js";
import { errorFields } from "../../logger.js";
import {
  deliveredAttempt,
  deliveryPlace,
  excludedBy,
  groupOf,
  perKeyOf,
  type ClaimedDelivery,
  type ClaimSetup,
  type ClaimStrategy,
  type ClaimProfile,
  profileOf,
} from "../claim-strategy.js";
import { KyselyClaimTransaction, SessionTransaction, type ClaimTransaction } from "./claim-transaction.js";
import { abandonUnstarted, HeldDelivery, type HoldingForm } from "./held-delivery.js";
import { SharedTransaction } from "./shared-transaction.js";
import { RowLockRows, type TransactionRun } from "./row-lock-rows.js";
import { RowLockWrites } from "./row-lock-writes.js";
import { MaxInWork } from "../cap/max-in-work.js";
import { SlotRows } from "../cap/slot-rows.js";
import { batchedFinishOf, commitsHandlerWrites, type Settlement } from "../settlement.js";

type HeldTransaction = ClaimTransaction;

/** What a row-lock delivery holds: the claim's transaction, alone or shared with the other rows of its claim. */
interface RowHold {
  readonly trx: HeldTransaction;
  readonly shared: SharedTransaction | undefined;
}

/** The savepoint a transactional handler's writes start at: a non-ack rolls back to it and still commits the attempt. */
const HANDLER_SAVEPOINT = "sqlinbox_handler";

/**
 * The row-lock form (Postgres, MySQL/MariaDB): each delivery is one transaction, opened by
 * its claim and kept open on its own connection while the handler runs.
 *
 * ```sql
 * BEGIN                       -- READ COMMITTED on MySQL/MariaDB
 * SELECT id … FOR UPDATE SKIP LOCKED        -- fifo on MySQL/MariaDB only: lock the group's rows first
 * SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED   -- Postgres counts the attempt in the same statement
 * UPDATE t SET attempt = attempt + 1 …      -- MySQL/MariaDB (no UPDATE … RETURNING)
 * -- the handler runs; the row stays locked
 * DELETE FROM t WHERE id = ?  | UPDATE t SET retry_after = ? …  -- the settlement
 * -- or a dead letter: INSERT INTO dead SELECT … FROM t WHERE id = ?; DELETE FROM t WHERE id = ?
 * COMMIT
 * ```
 *
 * A crash or a killed session rolls the transaction back: the row is claimable again at
 * once and its attempt is not spent. `batch(n)` opens up to n such transactions in one
 * claim round, one row each, so every delivery commits on its own and a crash never takes
 * a neighbour's work with it. With `.sharedTransaction()` (and for a batch handler) one
 * transaction claims up to n rows and commits once all of them settled (`SharedTransaction`).
 *
 * A transactional handler writes after a savepoint in the delivery's transaction: an ack
 * commits its writes with the settlement; any other outcome rolls back to the savepoint and
 * commits the settlement alone.
 */
export class RowLockClaim implements ClaimStrategy {
  readonly profile: ClaimProfile;
  readonly #setup: ClaimSetup;
  readonly #statements: RowLockStatements;
  readonly #open = new Set<HeldTransaction>();
  /** How a delivery's transaction is given back or settled: the delivery holds its transaction. */
  readonly #holding: HoldingForm<RowHold>;
  readonly #shared: boolean;
  /** A shared claim's acks go in one statement before its commit (where the engine's multi-row ack waits on nothing). */
  readonly #acksTogether: boolean;
  /** Shared claims' transactions still open (claimed, not yet committed or rolled back). */
  #heldShared = 0;
  /** What a claim's transaction takes: the fifo group's lock, the rows, their order keys, their attempt. */
  readonly #rows: RowLockRows;
  /** What a claim's transaction writes: statements, settlements with their follow-up, a shared claim's acks. */
  readonly #writes: RowLockWrites;
  /** `maxInWork`: one slot row per row, locked in the claim's transaction (`SlotRows`). */
  readonly #cap: MaxInWork | undefined;
  /** Claims of one row under way: their transactions are open and hold no slot yet. */
  #claiming = 0;

  constructor(setup: ClaimSetup) {
    const { capabilities, rowLock: statements } = setup.database.dialect;
    if (!capabilities.rowLock) throw noRowLocks(capabilities.engine, { subscription: setup.subscription, table: setup.spec.table });
    this.#setup = setup;
    this.#statements = statements;
    this.#rows = new RowLockRows(setup, statements);
    this.#writes = new RowLockWrites(setup, statements);
    this.#shared = setup.sharedTransaction === true;
    // One row per claim's transaction, unless the rows of a claim share one (their connection counted once, by the pacer).
    this.profile = profileOf(setup, { pace: this.#shared ? "shared" : "oneRow", claimsSideBySide: true, connectionsPerDelivery: 1 });
    this.#acksTogether = setup.database.dialect.capabilities.heldRowsAckTogether;
    // A claim of one row may queue for a slot while this process holds less than half the cap: its transactions
    // open, but the claims' own (a shared claim's transaction holds many rows and never queues).
    const slots =
      setup.capSlots === undefined
        ? undefined
        : new SlotRows(setup.capSlots.n, setup.capSlots.place, setup.database.dialect.flow, () => (this.#shared ? undefined : this.#open.size - this.#claiming));
    const cap = slots === undefined ? undefined : new MaxInWork(slots);
    this.#cap = cap;
    if (cap !== undefined) this.atCap = () => cap.atCap();
    // A wait for a slot that ran out was the poll: the next claim may queue again at once.
    if (slots !== undefined) this.waitAfterShortMs = () => (slots.waitedInVain ? 0 : undefined);
    this.#holding = {
      held: "row",
      clock: setup.clock,
      parked: setup.parked,
      isClosed: setup.isClosed,
      closedBeforeSettle: (d) => this.#giveBack(d.hold, "the broker closed"),
      // A row never started leaves its share of a shared transaction, which takes its attempt back and commits the others.
      abandon: (d, started) => {
        if (started) void this.#giveBack(d.hold, "the shutdown grace period is over", true);
        else if (d.hold.shared !== undefined) void d.hold.shared.leave(d.id);
        else void this.#giveBack(d.hold, "the app stopped before the delivery started");
      },
      committed: (d) => setup.followUp?.committed(d.id),
      settle: (d, settlement) => (d.hold.shared === undefined ? this.#settle(d, settlement) : this.#settleShared(d, d.hold.shared, settlement)),
      openHandlerTransaction: (d) => {
        // A transactional queue's claims open Kysely's own transaction (`#begin`): the handler's `ctx.tx` is a savepoint in it.
        const trx = d.hold.trx.kysely;
        if (trx === undefined) return Promise.reject(new Error("a row-lock claim without a Kysely transaction cannot open a handler's transaction"));
        return trx.savepoint(HANDLER_SAVEPOINT).execute();
      },
    };
  }

  start(): void {}
  stop(): void {}
  invalidate(): void {}

  /**
   * Rows claimed ahead but never started (the app stopped first; only shared claims buffer rows)
   * leave their transaction with their attempt taken back. One none of whose rows reached a handler
   * rolls back now, and this waits for it; one with rows in work commits their settlements once
   * they arrived, with the attempts of the rows that left taken back, which the drain waits for.
   */
  async releaseUnstarted(deliveries: readonly ClaimedDelivery[]): Promise<void> {
    await abandonUnstarted(deliveries);
    const ended = new Set<Promise<void>>();
    for (const delivery of deliveries) {
      const shared = (delivery as HeldDelivery<RowHold>).hold.shared;
      if (shared !== undefined && shared.waiting === 0) ended.add(shared.ended);
    }
    await Promise.all(ended);
  }

  /** Shared claims' transactions open now, each holding a connection until its last row settled. */
  get heldTransactions(): number {
    return this.#heldShared;
  }

  /** Transactions open now (one per delivery in work). */
  get openTransactions(): number {
    return this.#open.size;
  }

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    if (this.#shared) return this.#claimShared(limit);
    const claimed: ClaimedDelivery[] = [];
    while (claimed.length < limit) {
      const delivery = await this.#claimOne();
      if (delivery === undefined) break;
      claimed.push(delivery);
    }
    return claimed;
  }

  async #claimOne(): Promise<ClaimedDelivery | undefined> {
    const { database } = this.#setup;
    for (let retry = 1; ; retry++) {
      const trx = await this.#begin();
      try {
        // Capped (`maxInWork`): a slot first; uncapped claims run no statement and no await for it.
        const room = this.#cap === undefined ? 1 : await this.#cappedRoom(trx);
        const row = room === 0 ? undefined : (await this.#rows.take(trx, this.#claimRun(trx), this.#options(1)))[0];
        this.#cap?.ended({ wanted: 1, room, taken: row === undefined ? 0 : 1, kept: row === undefined ? 0 : 1 });
        if (row === undefined) {
          await trx.rollback();
          this.#open.delete(trx);
          return undefined;
        }
        return this.#delivery({ trx, shared: undefined }, row);
      } catch (error) {
        await this.#rollback(trx);
        if (isDeadlock(error) && database.retryDeadlock("claim", retry)) continue;
        throw error;
      }
    }
  }

  /** Up to `limit` rows in one transaction, which commits once every one of them settled. */
  async #claimShared(limit: number): Promise<ClaimedDelivery[]> {
    const { database, spec } = this.#setup;
    for (let retry = 1; ; retry++) {
      const trx = await this.#begin();
      try {
        const room = this.#cap === undefined ? limit : await this.#room(trx, limit);
        const rows = room === 0 ? [] : await this.#rows.take(trx, this.#claimRun(trx), this.#options(room));
        this.#cap?.ended({ wanted: limit, room, taken: rows.length, kept: rows.length });
        if (rows.length === 0) {
          await trx.rollback();
          this.#open.delete(trx);
          return [];
        }
        this.#heldShared++;
        let held = true;
        const release = () => {
          if (held) this.#heldShared--;
          held = false;
        };
        const shared = new SharedTransaction(rows.length, {
          commit: () => this.#commit(trx).then(release),
          rollback: () => this.#rollback(trx).finally(release),
          uncount: (ids) => (ids.length === 0 || spec.attempt === undefined ? Promise.resolve() : this.#writes.run(trx, "settle", this.#statements.uncountAttempts(spec, ids))),
          ...(this.#acksTogether ? { ackMany: (ids: readonly unknown[]) => this.#writes.ackMany(trx, ids) } : {}),
        });
        const hold: RowHold = { trx, shared };
        return rows.map((row) => this.#delivery(hold, row));
      } catch (error) {
        await this.#rollback(trx);
        if (isDeadlock(error) && database.retryDeadlock("claim", retry)) continue;
        throw error;
      }
    }
  }

  /** `maxInWork`: how many slot rows this claim's transaction locked, `want` at most (`SlotRows`). */
  async #room(trx: HeldTransaction, want: number): Promise<number> {
    return this.#cap === undefined ? want : (await this.#cap.take(this.#claimRun(trx), want)).length;
  }

  /** A claim of one row's slot, counted among the claims under way while it may queue for one. */
  async #cappedRoom(trx: HeldTransaction): Promise<number> {
    this.#claiming++;
    try {
      return await this.#room(trx, 1);
    } finally {
      this.#claiming--;
    }
  }

  /** `maxInWork`: the last claim found the cap full; absent without a cap (nothing asked on a delivery's end). */
  readonly atCap?: () => boolean;

  /** `maxInWork`: 0 after a claim whose wait for a slot ran out, else the poll interval; absent without a cap. */
  readonly waitAfterShortMs?: () => number | undefined;

  /** A claim of up to `limit` rows, now. */
  #options(limit: number) {
    return { limit, now: this.#setup.clock.now(), ...groupOf(this.#setup), ...perKeyOf(this.#setup), ...excludedBy(this.#setup) };
  }

  /** Runs claim statements in `trx`. */
  #claimRun(trx: HeldTransaction): TransactionRun {
    return (query) => this.#writes.run(trx, "claim", query);
  }

  async #commit(trx: HeldTransaction): Promise<void> {
    const injected = this.#setup.database.fault?.("settle");
    if (injected) throw injected;
    await this.#setup.database.activity.track(() => trx.commit());
    this.#open.delete(trx);
  }

  /** Gives a delivery's hold back unsettled: its own transaction rolls back, or its share of a shared one. */
  #giveBack(hold: RowHold, reason: string, now = false): Promise<void> {
    if (hold.shared === undefined) return this.#rollback(hold.trx);
    return hold.shared.giveBack(new Error(reason), now);
  }

  /** Opens a claim's transaction: Kysely's own where a transactional handler needs one for its savepoint, else statements on a held connection. */
  async #begin(): Promise<HeldTransaction> {
    const { database, transactional } = this.#setup;
    // The handler's savepoint is its `ctx.tx`: it starts from the app's Kysely, plugins and all.
    const trx = await database.activity.track<HeldTransaction>(() =>
      transactional === true
        ? KyselyClaimTransaction.begin(database.appDb, database.dialect.capabilities.claimIsolation)
        : SessionTransaction.begin(database.db, database.dialect.transaction),
    );
    this.#open.add(trx);
    return trx;
  }

  /** Rolls back and gives the connection back; a dead session (killed, crashed) already rolled back. */
  async #rollback(trx: HeldTransaction): Promise<void> {
    this.#open.delete(trx);
    try {
      await trx.rollback();
    } catch {
      // The connection is given back even when the rollback fails.
    }
  }

  #delivery(hold: RowHold, row: RawRow): ClaimedDelivery {
    const { spec } = this.#setup;
    const id = row[spec.id.name];
    const attempt = deliveredAttempt(spec, row);
    return new HeldDelivery(this.#holding, row, id, attempt, deliveryPlace(this.#setup, id), hold);
  }

  async #settle(delivery: HeldDelivery<RowHold>, settlement: Settlement): Promise<void> {
    const { trx } = delivery.hold;
    const { id, place, attempt } = delivery;
    const handlerTx = delivery.handlerTransaction;
    try {
      if (trx.isRolledBack) throw new Error("the transaction was rolled back at shutdown");
      // Any outcome but an ack undoes the handler's writes; the settlement still commits the attempt.
      if (handlerTx !== undefined && !commitsHandlerWrites(settlement)) await handlerTx.rollbackToSavepoint(HANDLER_SAVEPOINT).execute();
      await this.#writes.settle(trx, id, settlement, place, attempt);
      await this.#setup.database.activity.track(() => trx.commit());
      this.#open.delete(trx);
    } catch (error) {
      await this.#rollback(trx);
      // An ack with the handler's writes cannot be written again without them: the row comes back instead.
      if (isDeadlock(error) && !(handlerTx !== undefined && commitsHandlerWrites(settlement))) {
        await this.#settleAfterDeadlock(id, settlement, place, attempt);
        return;
      }
      throw missingTableError(this.#setup.database.dialect, error, place) ?? transactionLost(settlement.outcome.kind, attempt, error, place);
    }
  }

  /**
   * Writes one row's settlement into the transaction its claim shares; the last row commits for all.
   * An ack (or a drop) joins the one statement that acks the claim's rows before the commit.
   */
  #settleShared(delivery: HeldDelivery<RowHold>, shared: SharedTransaction, settlement: Settlement): Promise<void> {
    const { trx } = delivery.hold;
    const followed = this.#setup.followUp?.wants(settlement) === true;
    const finish = this.#acksTogether && !followed ? batchedFinishOf(settlement) : undefined;
    if (finish !== undefined) return shared.ack(delivery.id, finish, delivery.place);
    return shared.settle(settlement.outcome.kind, delivery.place, () => {
      if (trx.isRolledBack) return Promise.reject(new Error("the transaction was rolled back at shutdown"));
      if (followed) return this.#writes.settle(trx, delivery.id, settlement, delivery.place, delivery.attempt);
      const queries = this.#writes.settlement(delivery.id, settlement, delivery.place, delivery.attempt);
      // An ack is one statement: no loop, no extra promise per row.
      if (queries.length === 1) return this.#writes.run(trx, "settle", queries[0] as CompiledQuery);
      return this.#writes.runAll(trx, queries);
    });
  }

  /**
   * MySQL/MariaDB rolled the transaction back (InnoDB 1213): the handler's work is done, so
   * the settlement runs again in a fresh transaction, counting the attempt the rollback undid.
   * `FOR UPDATE` (waiting, not skipping) makes it wait for a claimer that took the row in
   * between; if that claimer finished the row, nothing is left to write.
   */
  async #settleAfterDeadlock(id: unknown, settlement: Settlement, place: ErrorPlace, attempt: number | undefined): Promise<void> {
    const { database, logger } = this.#setup;
    for (let retry = 1; ; retry++) {
      if (!database.retryDeadlock("settle", retry)) {
        throw settlementDeadlockedTooOften(settlement.outcome.kind, place);
      }
      const trx = await this.#begin();
      try {
        await this.#rows.countAgain((query) => this.#writes.run(trx, "settle", query), [id]);
        await this.#writes.settle(trx, id, settlement, place, attempt);
        await database.activity.track(() => trx.commit());
        this.#open.delete(trx);
        return;
      } catch (error) {
        await this.#rollback(trx);
        if (!isDeadlock(error)) {
          logger.error({ ...errorFields(error), ...place }, "settlement after a deadlock failed; the row is back in the queue");
          throw error;
        }
      }
    }
  }
}
