import type { ErrorPlace } from "@sqlinbox/core/internal";
import type { ClaimOptions, RawRow, RowLockStatements } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, QueryResult } from "kysely";
import { isDeadlock, missingTableError } from "../../drivers/database.js";
import { noRowLocks, settlementDeadlockedTooOften, transactionLost } from "../../errors.js";
import { errorFields } from "../../logger.js";
import type { HandlerOutcome } from "../../declare/outcome.js";
import {
  asClaimed,
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
import { abandonUnstarted, HeldDelivery, heldSettlement, type HoldingForm } from "./held-delivery.js";
import { MAX_ACKS_PER_STATEMENT } from "../lease/lease-acks.js";
import { SharedTransaction } from "./shared-transaction.js";
import { OrderKeyHold } from "./order-key-hold.js";
import { commitsHandlerWrites, finishOf } from "../settlement.js";

type HeldTransaction = ClaimTransaction;

/** What a row-lock delivery holds: the claim's transaction, alone or shared with the other rows of its claim. */
interface RowHold {
  readonly trx: HeldTransaction;
  readonly shared: SharedTransaction | undefined;
}

/** How many times a claim runs again for rows whose keys another transaction holds (`#claimRows`). */
const MAX_KEY_ROUNDS = 3;

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
  /** `maxInWork`: the last claim found fewer free slots than it wanted. */
  #atCap = false;
  /** Ordered keys: the claim's transaction also locks each claimed row's key (`OrderKeyHold`). */
  readonly #keys: OrderKeyHold | undefined;

  constructor(setup: ClaimSetup) {
    const statements = setup.database.dialect.rowLock;
    if (statements === null) {
      throw noRowLocks(setup.database.dialect.capabilities.engine, { subscription: setup.subscription, table: setup.spec.table });
    }
    this.#setup = setup;
    this.#statements = statements;
    this.#shared = setup.sharedTransaction === true;
    // One row per claim's transaction, unless the rows of a claim share one (their connection counted once, by the pacer).
    this.profile = profileOf(setup, { pace: this.#shared ? "shared" : "oneRow", claimsSideBySide: true, connectionsPerDelivery: 1 });
    this.#acksTogether = setup.database.dialect.capabilities.heldRowsAckTogether;
    this.#keys = OrderKeyHold.of(statements, setup.spec, perKeyOf(setup));
    if (setup.capSlots !== undefined) this.atCap = () => this.#atCap;
    this.#holding = {
      held: "row",
      spec: setup.spec,
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
      settle: (d, outcome) => (d.hold.shared === undefined ? this.#settle(d, outcome) : this.#settleShared(d, d.hold.shared, outcome)),
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
    const { database, spec, clock } = this.#setup;
    for (let retry = 1; ; retry++) {
      const trx = await this.#begin();
      try {
        // Capped (`maxInWork`): a slot first; uncapped claims run no statement and no await for it.
        if (this.#setup.capSlots !== undefined && (await this.#lockCapSlots(trx, 1)) === 0) {
          await trx.rollback();
          this.#open.delete(trx);
          return undefined;
        }
        const options = await this.#lockFifoGroup(trx, { limit: 1, now: clock.now(), ...groupOf(this.#setup), ...perKeyOf(this.#setup), ...excludedBy(this.#setup) });
        const row = (await this.#claimRows(trx, options))[0];
        if (row === undefined) {
          this.#atCap = false;
          await trx.rollback();
          this.#open.delete(trx);
          return undefined;
        }
        const count = this.#statements.countAttempts(spec, [row[spec.id.name]]);
        if (count !== null) await this.#run(trx, "claim", count);
        return this.#delivery({ trx, shared: undefined }, row, count !== null);
      } catch (error) {
        await this.#rollback(trx);
        if (isDeadlock(error) && database.retryDeadlock("claim", retry)) continue;
        throw error;
      }
    }
  }

  /** Up to `limit` rows in one transaction, which commits once every one of them settled. */
  async #claimShared(limit: number): Promise<ClaimedDelivery[]> {
    const { database, spec, clock } = this.#setup;
    for (let retry = 1; ; retry++) {
      const trx = await this.#begin();
      try {
        const slots = this.#setup.capSlots === undefined ? limit : await this.#lockCapSlots(trx, limit);
        const options = await this.#lockFifoGroup(trx, { limit: slots, now: clock.now(), ...groupOf(this.#setup), ...perKeyOf(this.#setup), ...excludedBy(this.#setup) });
        const rows = slots === 0 ? [] : await this.#claimRows(trx, options);
        if (rows.length < slots) this.#atCap = false;
        if (rows.length === 0) {
          await trx.rollback();
          this.#open.delete(trx);
          return [];
        }
        const count = this.#statements.countAttempts(
          spec,
          rows.map((row) => row[spec.id.name]),
        );
        if (count !== null) await this.#run(trx, "claim", count);
        this.#heldShared++;
        let held = true;
        const release = () => {
          if (held) this.#heldShared--;
          held = false;
        };
        const shared = new SharedTransaction(rows.length, {
          commit: () => this.#commit(trx).then(release),
          rollback: () => this.#rollback(trx).finally(release),
          uncount: (ids) => {
            const uncount = this.#statements.uncountAttempts(spec, ids);
            return uncount === null ? Promise.resolve() : this.#run(trx, "settle", uncount);
          },
          ...(this.#acksTogether ? { ackMany: (ids: readonly unknown[]) => this.#ackMany(trx, ids) } : {}),
        });
        const hold: RowHold = { trx, shared };
        return rows.map((row) => this.#delivery(hold, row, count !== null));
      } catch (error) {
        await this.#rollback(trx);
        if (isDeadlock(error) && database.retryDeadlock("claim", retry)) continue;
        throw error;
      }
    }
  }

  /**
   * Runs the claim in `trx`; with ordered keys, holds each claimed row's key too (`OrderKeyHold`).
   * A row whose key is held elsewhere (it committed late, behind a row of its key in work) stays
   * out: its attempt is taken back where the claim counted it, and the claim runs again without it
   * (and without the rows already taken) for the places left, a few times at most. The refused row
   * stays locked by this transaction until it ends, so the claims beside this one pass over it.
   */
  async #claimRows(trx: HeldTransaction, options: ClaimOptions): Promise<RawRow[]> {
    const { spec } = this.#setup;
    const rows = (await this.#run(trx, "claim", this.#statements.claim(spec, options))).rows;
    const keys = this.#keys;
    if (keys === undefined || rows.length === 0) return rows;
    const release = keys.release;
    if (release !== null) trx.releaseBeforeEnd(release);
    const held = keys.slots();
    const run = <R>(query: CompiledQuery<R>) => this.#run(trx, "claim", query);
    let { kept, refused } = await keys.take(run, rows, held);
    const left = [...(options.exclude ?? [])];
    for (let round = 1; refused.length > 0; round++) {
      // The claim counted the refused rows' attempts where it counts in the same statement (Postgres).
      const uncount = this.#statements.countAttempts(spec, [refused[0]]) === null ? this.#statements.uncountAttempts(spec, refused) : null;
      if (uncount !== null) await this.#run(trx, "claim", uncount);
      left.push(...refused);
      if (kept.length >= options.limit || round > MAX_KEY_ROUNDS) break;
      const exclude = [...left, ...kept.map((row) => row[spec.id.name])];
      const more = (await this.#run(trx, "claim", this.#statements.claim(spec, { ...options, limit: options.limit - kept.length, exclude }))).rows;
      if (more.length === 0) break;
      const next = await keys.take(run, more, held);
      kept = [...kept, ...next.kept];
      refused = next.refused;
    }
    return kept;
  }

  /**
   * `maxInWork(n)`: locks up to `want` of the cap's `n` slot rows in the claim's transaction, passing
   * over those other transactions hold; the claim takes at most that many rows. The slots are held
   * until the transaction ends (its settlement's commit, a rollback, or the session's end in a crash).
   * Without a cap: `want`, and no statement.
   */
  async #lockCapSlots(trx: HeldTransaction, want: number): Promise<number> {
    const cap = this.#setup.capSlots;
    if (cap === undefined) return want;
    const lock = this.#setup.database.dialect.flow.lockCapSlots(cap.place, cap.n, want);
    if (lock === null) return want;
    const slots = (await this.#run(trx, "claim", lock)).rows.length;
    // Only a cut claim says so; a claim short of rows says otherwise where it finds none.
    if (slots < want) this.#atCap = true;
    return slots;
  }

  /** `maxInWork`: the last claim found the cap full; absent without a cap (nothing asked on a delivery's end). */
  readonly atCap?: () => boolean;

  /**
   * Fifo on MySQL/MariaDB: the claim's transaction first locks the group's rows, and the claim
   * takes the head only if they are all the group's rows (none in work in another transaction).
   * Postgres does both in the claim statement; other tables and engines skip this.
   */
  async #lockFifoGroup(trx: HeldTransaction, options: ClaimOptions): Promise<ClaimOptions> {
    const lock = this.#statements.lockFifoGroup(this.#setup.spec, options);
    if (lock === null) return options;
    return { ...options, fifoLocked: (await this.#run(trx, "claim", lock)).rows.length };
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

  #run<R>(trx: HeldTransaction, kind: "claim" | "settle", query: CompiledQuery<R>): Promise<QueryResult<R>> {
    const injected = this.#setup.database.fault?.(kind);
    if (injected) return Promise.reject(injected);
    return this.#setup.database.activity.track(() => trx.executeQuery(query));
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

  #delivery(hold: RowHold, row: RawRow, countedAfterSelect: boolean): ClaimedDelivery {
    const { spec } = this.#setup;
    const id = row[spec.id.name];
    // Postgres returns the counted attempt; MySQL/MariaDB read the row before `countAttempts`.
    if (countedAfterSelect) asClaimed(spec, row);
    const attempt = deliveredAttempt(spec, row);
    return new HeldDelivery(this.#holding, row, id, attempt, deliveryPlace(this.#setup, id), hold);
  }

  async #settle(delivery: HeldDelivery<RowHold>, outcome: HandlerOutcome): Promise<void> {
    const { trx } = delivery.hold;
    const { id, place, attempt } = delivery;
    const handlerTx = delivery.handlerTransaction;
    try {
      if (trx.isRolledBack) throw new Error("the transaction was rolled back at shutdown");
      // Any outcome but an ack undoes the handler's writes; the settlement still commits the attempt.
      if (handlerTx !== undefined && !commitsHandlerWrites(outcome)) await handlerTx.rollbackToSavepoint(HANDLER_SAVEPOINT).execute();
      await this.#runAll(trx, this.#settlement(id, outcome, place, attempt));
      await this.#setup.database.activity.track(() => trx.commit());
      this.#open.delete(trx);
    } catch (error) {
      await this.#rollback(trx);
      // An ack with the handler's writes cannot be written again without them: the row comes back instead.
      if (isDeadlock(error) && !(handlerTx !== undefined && commitsHandlerWrites(outcome))) {
        await this.#settleAfterDeadlock(id, outcome, place, attempt);
        return;
      }
      throw missingTableError(this.#setup.database.dialect, error, place) ?? transactionLost(outcome.kind, attempt, error, place);
    }
  }

  /**
   * Writes one row's settlement into the transaction its claim shares; the last row commits for all.
   * An ack (or a drop) joins the one statement that acks the claim's rows before the commit.
   */
  #settleShared(delivery: HeldDelivery<RowHold>, shared: SharedTransaction, outcome: HandlerOutcome): Promise<void> {
    const { trx } = delivery.hold;
    const finish = this.#acksTogether ? finishOf(outcome) : undefined;
    if (finish !== undefined) return shared.ack(delivery.id, finish, delivery.place);
    return shared.settle(outcome.kind, delivery.place, () => {
      if (trx.isRolledBack) return Promise.reject(new Error("the transaction was rolled back at shutdown"));
      const queries = this.#settlement(delivery.id, outcome, delivery.place, delivery.attempt);
      // An ack is one statement: no loop, no extra promise per row.
      if (queries.length === 1) return this.#run(trx, "settle", queries[0] as CompiledQuery);
      return this.#runAll(trx, queries);
    });
  }

  /** Acks rows of a shared claim in its transaction: one statement per `MAX_ACKS_PER_STATEMENT` rows. */
  async #ackMany(trx: HeldTransaction, ids: readonly unknown[]): Promise<void> {
    if (trx.isRolledBack) throw new Error("the transaction was rolled back at shutdown");
    const now = this.#setup.clock.now();
    for (let i = 0; i < ids.length; i += MAX_ACKS_PER_STATEMENT) {
      const chunk = ids.length <= MAX_ACKS_PER_STATEMENT ? ids : ids.slice(i, i + MAX_ACKS_PER_STATEMENT);
      const query = this.#statements.settleAckMany(this.#setup.spec, chunk, now);
      if (query === null) throw new Error("this engine acks held rows one by one");
      await this.#run(trx, "settle", query);
    }
  }

  /** Runs one settlement's statements in turn, in its transaction. */
  async #runAll(trx: HeldTransaction, queries: readonly CompiledQuery[]): Promise<void> {
    for (const query of queries) await this.#run(trx, "settle", query);
  }

  #settlement(id: unknown, outcome: HandlerOutcome, place: ErrorPlace, attempt: number | undefined): CompiledQuery[] {
    const { spec, clock, database, deadLetter } = this.#setup;
    return heldSettlement(this.#statements, spec, id, outcome, clock.now(), { deadLetters: database.dialect.deadLetter, target: deadLetter, attempt, place });
  }

  /**
   * MySQL/MariaDB rolled the transaction back (InnoDB 1213): the handler's work is done, so
   * the settlement runs again in a fresh transaction, counting the attempt the rollback undid.
   * `FOR UPDATE` (waiting, not skipping) makes it wait for a claimer that took the row in
   * between; if that claimer finished the row, nothing is left to write.
   */
  async #settleAfterDeadlock(id: unknown, outcome: HandlerOutcome, place: ErrorPlace, attempt: number | undefined): Promise<void> {
    const { database, spec, logger } = this.#setup;
    for (let retry = 1; ; retry++) {
      if (!database.retryDeadlock("settle", retry)) {
        throw settlementDeadlockedTooOften(outcome.kind, place);
      }
      const trx = await this.#begin();
      try {
        const count = this.#statements.countAttempts(spec, [id]);
        if (count !== null) await this.#run(trx, "settle", count);
        await this.#runAll(trx, this.#settlement(id, outcome, place, attempt));
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
