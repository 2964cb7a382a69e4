import { isSqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import { closedBeforeLeaseSettlement, leaseNotHeld, noDeadLetter } from "../../errors.js";
import { ownStatementsOn, type AnyTransaction } from "../../drivers/database.js";
import { leaseHoldsFor, SETTLE_RETRY_MS, type KeptLease, type LeaseKeeper } from "./lease-keeper.js";
import { errorFields } from "../../logger.js";
import { commitsHandlerWrites, type Settlement, type StepWriter, writeStep } from "../settlement.js";
import { deliveryPlace, type ClaimSetup } from "../claim-strategy.js";
import type { HandlerTransaction } from "../held/held-delivery.js";
import { LeaseAcks, type LeaseDelivery, type LeaseSettlements } from "./lease-delivery.js";

/**
 * The lease form's settlements of one subscription, other than the batched acks: a release and a
 * dead-letter move, each carrying the lease's token (zero rows: the lease was lost, `LeaseLost`),
 * and a transactional handler's ack, written in its own transaction, which commits only if it took.
 */
export class LeaseWrites implements LeaseSettlements {
  readonly #setup: ClaimSetup;
  readonly keeper: LeaseKeeper;
  readonly acks: LeaseAcks;

  constructor(setup: ClaimSetup, keeper: LeaseKeeper) {
    this.#setup = setup;
    this.keeper = keeper;
    this.acks = new LeaseAcks(setup, keeper);
  }

  followed(settlement: Settlement): boolean {
    return this.#setup.followUp?.wants(settlement) === true;
  }

  committed(id: unknown): void {
    this.#setup.followUp?.committed(id);
  }

  /** Any settlement but a plain ack: the handler's transaction ends first (committed with an ack, else rolled back). */
  settle(delivery: LeaseDelivery, settlement: Settlement): Promise<void> {
    const { lease } = delivery;
    const tx = delivery.handlerTransaction;
    if (tx !== undefined) {
      delivery.handlerTransaction = undefined;
      if (commitsHandlerWrites(settlement) && !delivery.abandoned && !this.#setup.isClosed())
        return this.#ackWithin(tx, lease, deliveryPlace(this.#setup, delivery.id), settlement);
      // Any other settlement: the handler's writes roll back, then the row settles as usual.
      return rollbackQuietly(tx).then(() => this.settle(delivery, settlement));
    }
    if (this.#setup.isClosed() || delivery.abandoned) {
      this.keeper.release(lease);
      return Promise.reject(closedBeforeLeaseSettlement(deliveryPlace(this.#setup, delivery.id)));
    }
    return writeStep(settlement, this.#steps, delivery, settlement);
  }

  /** Each step on a lease: an ack joins the next batched statement; a release or a dead-letter move runs on its own, carrying the token. */
  readonly #steps: StepWriter<LeaseDelivery, Settlement, Promise<void>> = {
    finish: (how, delivery, settlement, result) =>
      this.followed(settlement)
        ? this.#ackFollowed(delivery.lease, settlement)
        : result !== undefined
          ? this.#ackWithResult(delivery.lease, result)
          : new Promise<void>((resolve, reject) => this.acks.ackThen(delivery.lease, how, { settled: (ok, error) => (ok ? resolve() : reject(error)) })),
    release: (delayMs, refund, delivery, settlement) => this.#release(delivery.lease, delayMs, refund, settlement.outcome.kind),
    deadLetter: (reason, delivery, settlement) => this.#deadLetter(delivery.lease, reason, settlement, delivery.attempt),
  };

  /** Transactional mode: a transaction of the handler's own, on a connection it holds until the settlement. */
  async openHandlerTransaction(delivery: LeaseDelivery): Promise<AnyTransaction> {
    const { database } = this.#setup;
    delivery.handlerTransaction = await database.activity.track(() => database.appDb.startTransaction().execute());
    return delivery.handlerTransaction;
  }

  /** The delivery is given up unsettled: its handler's writes roll back, its lease is no longer kept, its signal aborts. */
  abandon(delivery: LeaseDelivery, reason: unknown): void {
    const tx = delivery.handlerTransaction;
    delivery.handlerTransaction = undefined;
    if (tx !== undefined) void rollbackQuietly(tx);
    this.keeper.release(delivery.lease);
    delivery.lease.abort(reason);
  }

  /**
   * The ack of a transactional handler: the settlement runs in the handler's transaction, still
   * carrying the lease token, and the transaction commits only if it took.
   */
  async #ackWithin(tx: HandlerTransaction, lease: KeptLease, place: ErrorPlace, settlement: Settlement): Promise<void> {
    const { database, spec, clock, precision, followUp } = this.#setup;
    const { lease: statements, capabilities } = database.dialect;
    const ackResult = settlement.step.step === "finish" ? settlement.step.result : undefined;
    try {
      // A single writer (SQLite) has one connection, which this transaction holds: a running extension waits
      // for it, so waiting for the extension would never end (and no extension can run until this commits).
      if (capabilities.singleWriter) lease.settling = true;
      else await this.keeper.beginSettle(lease);
      const token = { id: lease.id, held: lease.held };
      const query =
        ackResult === undefined ? statements.settleAckMany(spec, [token], clock.now(), precision) : statements.settleAckWithResult(spec, token, clock.now(), ackResult, precision);
      // Not `database.execute`: a deadlock retried statement by statement would ack without the handler's writes.
      const result = await database.activity.track(() => ownStatementsOn(tx).executeQuery(query));
      const written = capabilities.updateReturning && ackResult === undefined ? result.rows.length : Number(result.numAffectedRows ?? 0n);
      if (written === 0) throw leaseNotHeld("ack", lease.held, place);
      if (followUp?.wants(settlement) === true) await followUp.run((q) => database.activity.track(() => ownStatementsOn(tx).executeQuery(q)), lease.id, settlement);
      await database.activity.track(() => tx.commit().execute());
    } catch (error) {
      await rollbackQuietly(tx);
      throw error;
    } finally {
      this.keeper.release(lease);
    }
  }

  async #deadLetter(lease: KeptLease, reason: string | undefined, settlement: Settlement, attempt: number | undefined): Promise<void> {
    await this.keeper.beginSettle(lease);
    try {
      await moveHeld(this.#setup, lease, reason, settlement, attempt);
    } finally {
      this.keeper.release(lease);
    }
  }

  /**
   * An ack (or a drop) whose settlement carries a follow-up: the ack's statement, carrying the token,
   * then the follow-up's, in one transaction that commits only if the ack took. Zero rows: the lease
   * was lost, nothing is written (`LeaseLost`). A deadlock runs the whole transaction again.
   */
  async #ackFollowed(lease: KeptLease, settlement: Settlement): Promise<void> {
    const { database, spec, clock, precision, followUp } = this.#setup;
    const { lease: statements, capabilities } = database.dialect;
    const result = settlement.step.step === "finish" ? settlement.step.result : undefined;
    await this.keeper.beginSettle(lease);
    try {
      for (;;) {
        try {
          await database.transaction("settle", async (trx) => {
            const token = { id: lease.id, held: lease.held };
            const now = clock.now();
            const query = result === undefined ? statements.settleAckMany(spec, [token], now, precision) : statements.settleAckWithResult(spec, token, now, result, precision);
            const done = await database.execute("settle", query, trx);
            const written = capabilities.updateReturning && result === undefined ? done.rows.length : Number(done.numAffectedRows ?? 0n);
            if (written === 0) throw leaseNotHeld(settlement.outcome.kind, lease.held, deliveryPlace(this.#setup, lease.id));
            await followUp?.run((q) => database.execute("settle", q, trx), lease.id, settlement);
          });
          return;
        } catch (error) {
          // A lost connection, or a busy SQLite file: nothing was written, and the lease still holds for a while, so it goes again.
          if (isSqlInboxError(error) || this.#setup.isClosed() || !leaseHoldsFor(lease, clock.now())) throw error;
          this.#setup.logger.warn({ ...errorFields(error), id: lease.id }, "settlement failed; retrying while the lease holds");
          await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_MS));
        }
      }
    } finally {
      this.keeper.release(lease);
    }
  }

  /** An ack that writes the handler's result, in one statement carrying the token: zero rows, the lease was lost and no result is written. */
  async #ackWithResult(lease: KeptLease, result: string): Promise<void> {
    const { database, spec, clock, precision } = this.#setup;
    await this.keeper.beginSettle(lease);
    try {
      const written = await database.execute("settle", database.dialect.lease.settleAckWithResult(spec, { id: lease.id, held: lease.held }, clock.now(), result, precision));
      if (Number(written.numAffectedRows ?? 0n) === 0) throw leaseNotHeld("ack", lease.held, deliveryPlace(this.#setup, lease.id));
    } finally {
      this.keeper.release(lease);
    }
  }

  /**
   * Writes progress while the lease is held, fenced by its token like an extension: zero rows, the lease
   * was lost. A single writer's one connection is the handler's transaction's, if it has one: the value shows when it commits.
   */
  async writeProgress(lease: KeptLease, progress: string, handlerTransaction: HandlerTransaction | undefined): Promise<void> {
    const { database, spec, precision } = this.#setup;
    const via = database.dialect.capabilities.singleWriter ? handlerTransaction : undefined;
    for (;;) {
      const held = lease.held;
      const written = await database.execute("settle", database.dialect.lease.writeProgress(spec, { id: lease.id, held }, progress, precision), via);
      if (Number(written.numAffectedRows ?? 0n) > 0) return;
      // An extension moved the token while this ran: write again with the new one.
      if (lease.held.getTime() === held.getTime() || !leaseHoldsFor(lease, this.#setup.clock.now())) throw leaseNotHeld("progress", held, deliveryPlace(this.#setup, lease.id));
    }
  }

  /** A release carrying the token; a snooze's (`refund`) gives the claim's attempt back in the same statement. */
  async #release(lease: KeptLease, delayMs: number | null, refund: boolean, kind: string): Promise<void> {
    const { database, spec, clock, precision, isClosed } = this.#setup;
    await this.keeper.beginSettle(lease);
    try {
      for (;;) {
        const now = clock.now();
        const retryAt = delayMs === null ? null : new Date(now.getTime() + delayMs);
        let result: { numAffectedRows?: bigint };
        try {
          const statements = database.dialect.lease;
          const token = { id: lease.id, held: lease.held };
          const query = refund ? statements.settleSnooze(spec, token, retryAt, precision) : statements.settleRetry(spec, token, retryAt, precision);
          result = await database.execute("settle", query);
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
      this.keeper.release(lease);
    }
  }
}

/**
 * The dead-letter move while the lease is held, in one transaction: the insert from a select
 * of the row holding the token, then the delete with the same token (or the group update alone).
 * Zero rows from either: the lease was lost; the transaction rolls back, nothing is inserted.
 */
async function moveHeld(setup: ClaimSetup, lease: KeptLease, reason: string | undefined, settlement: Settlement, attempt: number | undefined): Promise<void> {
  const { database, spec, precision, deadLetter, followUp } = setup;
  const kind = settlement.outcome.kind;
  const place = deliveryPlace(setup, lease.id);
  if (deadLetter === undefined) throw noDeadLetter(place);
  const statements = database.dialect.deadLetter;
  const token = { id: lease.id, held: lease.held };
  const record = { lastError: reason ?? null, attempts: attempt ?? null, at: setup.clock.now() };
  const queries =
    "group" in deadLetter
      ? [statements.toGroup(spec, lease.id, deadLetter.group, record, token, precision)]
      : [statements.toTable(spec, deadLetter.table, lease.id, record, token, precision), statements.removeMoved(spec, lease.id, token, precision)];
  await database.transaction("settle", async (trx) => {
    for (const query of queries) {
      const result = await database.execute("settle", query, trx);
      if (Number(result.numAffectedRows ?? 0n) === 0) throw leaseNotHeld(kind, lease.held, place);
    }
    if (followUp?.wants(settlement) === true) await followUp.run((q) => database.execute("settle", q, trx), lease.id, settlement);
  });
}

/** Rolls a handler's transaction back; a dead connection already did. */
async function rollbackQuietly(tx: HandlerTransaction): Promise<void> {
  if (tx.isCommitted || tx.isRolledBack) return;
  await tx
    .rollback()
    .execute()
    .catch(() => undefined);
}
