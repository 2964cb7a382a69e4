import { isSqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { orderedKey } from "@sqlinbox/kysely-dialects/internal";
import { closed, closedBeforeLeaseSettlement, leaseNotHeld, noDeadLetter } from "../../errors.js";
import { ownStatementsOn, type AnyTransaction } from "../../drivers/database.js";
import { keyOf, LeaseKeeper, leaseHoldsFor, SETTLE_RETRY_MS, type KeptLease } from "./lease-keeper.js";
import { errorFields } from "../../logger.js";
import type { HandlerOutcome } from "../../declare/outcome.js";
import { commitsHandlerWrites, finishOf, type StepWriter, writeStep } from "../settlement.js";
import {
  asClaimed,
  deliveredAttempt,
  deliveryPlace,
  groupOf,
  perKeyOf,
  type ClaimedDelivery,
  type ClaimSetup,
  type ClaimStrategy,
  type ClaimProfile,
  profileOf,
} from "../claim-strategy.js";
import type { HandlerTransaction } from "../held/held-delivery.js";
import { LeaseAcks, MAX_ACKS_PER_STATEMENT, type AckDone } from "./lease-acks.js";

/**
 * The lease form: a claim writes `now + lease` into the lease column and counts an attempt,
 * then commits, so a delivery in work holds no connection. The deadline is the token:
 * every extension and settlement carries it, and one that finds another deadline changes
 * nothing (`LeaseLost`).
 *
 * A transactional handler writes in a transaction of its own, held for its whole run: an ack
 * deletes the row inside it, still carrying the token, and commits only if that took; zero
 * rows means the lease was lost, and everything rolls back (`LeaseLost`).
 */
export class LeaseClaim implements ClaimStrategy {
  readonly profile: ClaimProfile;
  readonly heldTransactions = 0;
  readonly #setup: ClaimSetup;
  readonly #keeper: LeaseKeeper;
  readonly #acks: LeaseAcks;
  /** Ordered keys where claims run side by side: each claim's rows are checked once it has committed (`#withoutCrowded`). */
  readonly #checksKeys: boolean;

  constructor(setup: ClaimSetup) {
    this.#setup = setup;
    this.profile = profileOf(setup, {
      // Rows wait in the subscription's buffer at no cost: the keeper extends their leases too.
      pace: "ahead",
      // Row locks mean concurrent writers; without them (SQLite) one writer runs at a time.
      claimsSideBySide: setup.database.dialect.capabilities.rowLock,
      // A claim of one statement (Postgres) is short: two in flight cover its latency, and more only add server CPU per
      // row (lease b64-w8 on Postgres: 2 claims ahead and 1 ack statement at a time beat 4 and 2 by about 12%).
      // A claim of two statements in a transaction (MySQL/MariaDB) takes longer: claims ahead follow its latency.
      claimsContend: setup.database.dialect.capabilities.rowLock && setup.database.dialect.capabilities.updateReturning,
      // Nothing held between statements; a transactional handler's transaction holds a connection.
      connectionsPerDelivery: setup.transactional === true ? 1 : 0,
    });
    this.#keeper = new LeaseKeeper(setup);
    this.#acks = new LeaseAcks(setup, this.#keeper);
    this.#checksKeys = this.profile.claimsSideBySide && orderedKey(setup.spec, perKeyOf(setup)) !== undefined;
  }

  start(): void {
    this.#keeper.start();
  }

  stop(): void {
    this.#keeper.stop();
  }

  invalidate(): void {}

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const { database, spec, clock, leaseMs, precision } = this.#setup;
    const { lease: statements, time } = database.dialect;
    const now = clock.now();
    const until = time.truncate(new Date(now.getTime() + leaseMs), precision);
    const group = { ...groupOf(this.#setup), ...perKeyOf(this.#setup) };
    const single = statements.claim(spec, { limit, now, until, precision, ...group });
    let rows: readonly RawRow[];
    if (single !== null) {
      rows = (await database.execute("claim", single)).rows;
      // Postgres returns the deadline it wrote as NULL (a claimed row's lease is never NULL): parsing it per row
      // would cost more than the rest of a delivery's bookkeeping. It is written in here, as the driver reads time.
      const leaseName = spec.lease?.name;
      if (leaseName !== undefined && rows.length > 0 && (rows[0] as RawRow)[leaseName] === null) {
        const stamped = database.timeAsRead(until, precision);
        for (const row of rows) row[leaseName] = ownCopy(stamped);
      }
    } else {
      // MySQL/MariaDB: SELECT … FOR UPDATE SKIP LOCKED, then stamp the rows, in one short transaction.
      rows = await database.transaction("claim", async (trx) => {
        // Fifo: lock the group's rows first; the claim takes the head only if no other session holds one of them.
        const options = { limit, now, ...group };
        const lock = statements.lockFifoGroup(spec, options);
        const fifo = lock === null ? {} : { fifoLocked: (await database.execute("claim", lock, trx)).rows.length };
        const selected = (await database.execute("claim", statements.selectClaimable(spec, { ...options, ...fifo }), trx)).rows;
        if (selected.length === 0) return selected;
        const ids = selected.map((r) => r[spec.id.name]);
        await database.execute("claim", statements.stampClaimed(spec, ids, until, precision), trx);
        // Read before the stamp: the rows handed over carry the attempt and the deadline it wrote, as the driver reads them back.
        const stamped = database.timeAsRead(until, precision);
        for (const row of selected) asClaimed(spec, row, ownCopy(stamped));
        return selected;
      });
    }
    const deliveries = rows.map((row) => this.#delivery(row, until));
    return this.#checksKeys ? this.#withoutCrowded(deliveries) : deliveries;
  }

  /**
   * Ordered keys where claims run side by side: a claim cannot see a lease another claim is writing,
   * so once this one has committed, the rows whose key holds `perKey` other live leases (a claim of
   * the key's late-committed head, say, that ran beside this one) are given back unstarted, their
   * attempt undone. Of two such claims the later to commit sees the other here; if both do, both
   * give back and the key's head goes to the next claim. A check that fails gives back every row:
   * none can be known to be alone in its key.
   */
  async #withoutCrowded(deliveries: LeaseDelivery[]): Promise<ClaimedDelivery[]> {
    const { database, spec, clock } = this.#setup;
    if (deliveries.length === 0) return deliveries;
    const check = database.dialect.lease.selectCrowded(
      spec,
      { ...perKeyOf(this.#setup), now: clock.now() },
      deliveries.map((d) => d.id),
    );
    if (check === null) return deliveries;
    let crowded: Set<string>;
    try {
      crowded = new Set((await database.execute("claim", check)).rows.map((r) => keyOf(r[spec.id.name])));
    } catch (error) {
      await this.#giveBack(
        deliveries.map((d) => d.lease),
        "claimed rows given back: the check of their order keys failed",
      );
      throw error;
    }
    if (crowded.size === 0) return deliveries;
    const given = deliveries.filter((d) => crowded.has(d.lease.key)).map((d) => d.lease);
    await this.#giveBack(given, "claimed rows given back unstarted: a claim beside this one took another row of their order key");
    return deliveries.filter((d) => !crowded.has(d.lease.key));
  }

  #delivery(row: RawRow, held: Date): LeaseDelivery {
    const { spec } = this.#setup;
    const id = row[spec.id.name];
    const attempt = deliveredAttempt(spec, row);
    return new LeaseDelivery(this, id, row, attempt, this.#keeper.hold(id, held));
  }

  /** @internal A delivery's settlement: acks join the next batched statement, the rest run on their own. */
  settle(delivery: LeaseDelivery, outcome: HandlerOutcome, abandoned: boolean): Promise<void> {
    const lease = delivery.lease;
    const tx = delivery.handlerTransaction;
    if (tx !== undefined) {
      delivery.handlerTransaction = undefined;
      if (commitsHandlerWrites(outcome) && !abandoned && !this.#setup.isClosed()) return this.#ackWithin(tx, lease, deliveryPlace(this.#setup, delivery.id));
      // Any other outcome: the handler's writes roll back, then the row settles as usual.
      return rollbackQuietly(tx).then(() => this.settle(delivery, outcome, abandoned));
    }
    if (this.#setup.isClosed() || abandoned) {
      this.#keeper.release(lease);
      return Promise.reject(closedBeforeLeaseSettlement(deliveryPlace(this.#setup, delivery.id)));
    }
    return writeStep(outcome, this.#steps, delivery, outcome);
  }

  /** Each step on a lease: an ack joins the next batched statement; a release or a dead-letter move runs on its own, carrying the token. */
  readonly #steps: StepWriter<LeaseDelivery, HandlerOutcome, Promise<void>> = {
    finish: (how, delivery) => this.#acks.ack(delivery.lease, how),
    release: (delayMs, delivery, outcome) => this.#settleRetry(delivery.lease, delayMs, outcome.kind),
    deadLetter: (reason, delivery, outcome) => this.#settleDeadLetter(delivery.lease, reason, outcome.kind, delivery.attempt),
  };

  /**
   * @internal `settle` with a callback: a plain ack (the hot path) joins the next batched statement
   * with no promise made; every other settlement runs as `settle` does and reports to `done`.
   */
  settleThen(delivery: LeaseDelivery, outcome: HandlerOutcome, abandoned: boolean, done: AckDone): void {
    const finish = finishOf(outcome);
    if (finish !== undefined && delivery.handlerTransaction === undefined && !abandoned && !this.#setup.isClosed()) {
      this.#acks.ackThen(delivery.lease, finish, done);
      return;
    }
    this.settle(delivery, outcome, abandoned).then(
      () => done(true),
      (error: unknown) => done(false, error),
    );
  }

  /** @internal Transactional mode: a transaction of the handler's own, on a connection it holds until the settlement. */
  async openHandlerTransaction(delivery: LeaseDelivery): Promise<AnyTransaction> {
    const { database } = this.#setup;
    delivery.handlerTransaction = await database.activity.track(() => database.appDb.startTransaction().execute());
    return delivery.handlerTransaction;
  }

  /**
   * The ack of a transactional handler: the settlement runs in the handler's transaction, still
   * carrying the lease token, and the transaction commits only if it took.
   */
  async #ackWithin(tx: HandlerTransaction, lease: KeptLease, place: ErrorPlace): Promise<void> {
    const { database, spec, clock, precision } = this.#setup;
    const { lease: statements, capabilities } = database.dialect;
    try {
      // A single writer (SQLite) has one connection, which this transaction holds: a running extension waits
      // for it, so waiting for the extension would never end (and no extension can run until this commits).
      if (capabilities.singleWriter) lease.settling = true;
      else await this.#keeper.beginSettle(lease);
      const query = statements.settleAckMany(spec, [{ id: lease.id, held: lease.held }], clock.now(), precision);
      // Not `database.execute`: a deadlock retried statement by statement would ack without the handler's writes.
      const result = await database.activity.track(() => ownStatementsOn(tx).executeQuery(query));
      const written = capabilities.updateReturning ? result.rows.length : Number(result.numAffectedRows ?? 0n);
      if (written === 0) throw leaseNotHeld("ack", lease.held, place);
      await database.activity.track(() => tx.commit().execute());
    } catch (error) {
      await rollbackQuietly(tx);
      throw error;
    } finally {
      this.#keeper.release(lease);
    }
  }

  /** @internal */
  /** `LeaseDelivery.lapsedBeforeStart`: the keeper judges the lease (against the clock leases are written by, when in doubt). */
  lapsed(delivery: LeaseDelivery): boolean {
    return this.#keeper.lapsed(delivery.lease);
  }

  abandon(delivery: LeaseDelivery, reason: unknown): void {
    const tx = delivery.handlerTransaction;
    delivery.handlerTransaction = undefined;
    if (tx !== undefined) void rollbackQuietly(tx);
    this.#keeper.release(delivery.lease);
    delivery.lease.abort(reason);
  }

  async releaseUnstarted(deliveries: readonly ClaimedDelivery[]): Promise<void> {
    const leases = deliveries.flatMap((d) => (d instanceof LeaseDelivery ? [d.lease] : []));
    await this.#giveBack(leases, "rows claimed ahead but not started were given back");
  }

  /**
   * Claimed rows no handler received: their leases given back and their attempts undone, each row only while
   * it holds its token; logged with `what`. On failure (or once closed) they return when their lease expires.
   */
  async #giveBack(leases: readonly KeptLease[], what: string): Promise<void> {
    const { database, spec, precision, logger, isClosed } = this.#setup;
    if (leases.length === 0) return;
    try {
      if (isClosed()) throw closed({ subscription: this.#setup.subscription, table: spec.table });
      await this.#keeper.beginSettleMany(leases);
      let released = 0;
      for (let i = 0; i < leases.length; i += MAX_ACKS_PER_STATEMENT) {
        const chunk = leases.slice(i, i + MAX_ACKS_PER_STATEMENT).map((l) => ({ id: l.id, held: l.held }));
        const result = await database.execute("settle", database.dialect.lease.releaseUnstarted(spec, chunk, precision));
        released += database.dialect.capabilities.updateReturning ? result.rows.length : Number(result.numAffectedRows ?? 0n);
      }
      logger.info({ released, unstarted: leases.length, ids: leases.length <= 16 ? leases.map((l) => l.id) : undefined }, what);
    } catch (error) {
      logger.warn(
        { ...errorFields(error), unstarted: leases.length },
        "could not give back claimed rows no handler received; they return when their lease expires, their attempt spent",
      );
    } finally {
      for (const lease of leases) this.#keeper.release(lease);
    }
  }

  async #settleDeadLetter(lease: KeptLease, reason: string | undefined, kind: string, attempt: number | undefined): Promise<void> {
    await this.#keeper.beginSettle(lease);
    try {
      await moveHeld(this.#setup, lease, reason, kind, attempt);
    } finally {
      this.#keeper.release(lease);
    }
  }

  async #settleRetry(lease: KeptLease, delayMs: number | null, kind: string): Promise<void> {
    const { database, spec, clock, precision, isClosed } = this.#setup;
    await this.#keeper.beginSettle(lease);
    try {
      for (;;) {
        const now = clock.now();
        const retryAt = delayMs === null ? null : new Date(now.getTime() + delayMs);
        let result: { numAffectedRows?: bigint };
        try {
          result = await database.execute("settle", database.dialect.lease.settleRetry(spec, { id: lease.id, held: lease.held }, retryAt, precision));
        } catch (error) {
          // A lost connection: the lease still holds for a while, so the settlement goes again on a fresh one.
          if (isSqlInboxError(error) || isClosed() || !leaseHoldsFor(lease, clock.now())) throw error;
          this.#setup.logger.warn({ ...errorFields(error), id: lease.id }, "settlement failed; retrying on a fresh connection while the lease holds");
          await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_MS));
          continue;
        }
        if (Number(result.numAffectedRows ?? 0n) === 0) {
          throw leaseNotHeld(kind, lease.held, deliveryPlace(this.#setup, lease.id));
        }
        return;
      }
    } finally {
      this.#keeper.release(lease);
    }
  }
}

/** A value for one row: a `Date` is copied (a handler may change its row's), text is shared. */
function ownCopy(value: unknown): unknown {
  return value instanceof Date ? new Date(value.getTime()) : value;
}

/**
 * The dead-letter move while the lease is held, in one transaction: the insert from a select
 * of the row holding the token, then the delete with the same token (or the group update alone).
 * Zero rows from either: the lease was lost; the transaction rolls back, nothing is inserted.
 */
async function moveHeld(setup: ClaimSetup, lease: KeptLease, reason: string | undefined, kind: string, attempt: number | undefined): Promise<void> {
  const { database, spec, precision, deadLetter } = setup;
  const place = deliveryPlace(setup, lease.id);
  if (deadLetter === undefined) throw noDeadLetter(place);
  const statements = database.dialect.deadLetter;
  const token = { id: lease.id, held: lease.held };
  const record = { lastError: reason ?? null, attempts: attempt ?? null };
  const queries =
    "group" in deadLetter
      ? [statements.toGroup(spec, lease.id, deadLetter.group, record, token, precision)]
      : [statements.toTable(spec, deadLetter.table, lease.id, record, token, precision), statements.removeMoved(spec, lease.id, token, precision)];
  await database.transaction("settle", async (trx) => {
    for (const query of queries) {
      const result = await database.execute("settle", query, trx);
      if (Number(result.numAffectedRows ?? 0n) === 0) throw leaseNotHeld(kind, lease.held, place);
    }
  });
}

/** One claimed row of the lease form; its signal exists once something asks for it. */
class LeaseDelivery implements ClaimedDelivery {
  readonly #claim: LeaseClaim;
  readonly id: unknown;
  readonly row: RawRow;
  readonly attempt: number | undefined;
  readonly lease: KeptLease;
  /** Transactional mode: the handler's transaction, until the settlement ends it. */
  handlerTransaction: HandlerTransaction | undefined;
  slot = -1;
  #abandoned = false;

  constructor(claim: LeaseClaim, id: unknown, row: RawRow, attempt: number | undefined, lease: KeptLease) {
    this.#claim = claim;
    this.id = id;
    this.row = row;
    this.attempt = attempt;
    this.lease = lease;
  }

  get signal(): AbortSignal {
    return this.lease.signal;
  }

  leaseDeadline(): Date {
    return this.lease.held;
  }

  settle(outcome: HandlerOutcome): Promise<void> {
    return this.#claim.settle(this, outcome, this.#abandoned);
  }

  settleThen(outcome: HandlerOutcome, done: AckDone): void {
    this.#claim.settleThen(this, outcome, this.#abandoned, done);
  }

  openHandlerTransaction(): Promise<AnyTransaction> {
    return this.#claim.openHandlerTransaction(this);
  }

  interrupt(reason: unknown): void {
    this.lease.interrupt(reason);
  }

  lapsedBeforeStart(): boolean {
    return this.#claim.lapsed(this);
  }

  abandon(reason: unknown): void {
    this.#abandoned = true;
    this.#claim.abandon(this, reason);
  }
}

/** Rolls a handler's transaction back; a dead connection already did. */
async function rollbackQuietly(tx: HandlerTransaction): Promise<void> {
  if (tx.isCommitted || tx.isRolledBack) return;
  await tx
    .rollback()
    .execute()
    .catch(() => undefined);
}
