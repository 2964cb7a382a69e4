import { isSqlInboxError } from "@sqlinbox/core/internal";
import type { HeldLease, RawRow } from "@sqlinbox/kysely-dialects";
import { batchedAckShort, closedBeforeLeaseSettlement, leaseNotHeld } from "../../errors.js";
import type { AnyTransaction } from "../../drivers/database.js";
import { keyOf, leaseHoldsFor, SETTLE_RETRY_MS, type KeptLease, type LeaseKeeper } from "./lease-keeper.js";
import { errorFields } from "../../logger.js";
import { batchedFinishOf, type Settlement } from "../settlement.js";
import { deliveryPlace, MAX_ACKS_PER_STATEMENT, type ClaimedDelivery, type ClaimSetup, type SettleDone } from "../claim-strategy.js";
import type { HandlerTransaction } from "../held/held-delivery.js";

/**
 * A lease delivery and the way most of them settle: one claimed row (`LeaseDelivery`), whose plain
 * ack joins its subscription's next batched ack statement (`LeaseAcks`) with no promise made. Every
 * other settlement — a release, a dead-letter move, a transactional handler's ack — runs on its
 * own through `LeaseSettlements` (`LeaseWrites`, `lease-writes.ts`), each carrying the lease's token.
 */

/** What a lease delivery hands any settlement but a plain ack to, and the acks it joins. */
export interface LeaseSettlements {
  readonly keeper: LeaseKeeper;
  readonly acks: LeaseAcks;
  /** The settlement carries statements of a follow-up (a workflow step's release): written in a transaction of its own, never batched. */
  followed(settlement: Settlement): boolean;
  /** A settlement of row `id` written on its own has committed: its follow-up is told. */
  committed(id: unknown): void;
  /** Any settlement but a plain ack: the handler's transaction ends first (committed with an ack, else rolled back). */
  settle(delivery: LeaseDelivery, settlement: Settlement): Promise<void>;
  openHandlerTransaction(delivery: LeaseDelivery): Promise<AnyTransaction>;
  /** Writes progress while the lease is held, fenced by its token; rejects with `LeaseLost` when it is not. */
  writeProgress(lease: KeptLease, progress: string, handlerTransaction: HandlerTransaction | undefined): Promise<void>;
  /** The delivery is given up unsettled: its handler's writes roll back, its lease is no longer kept, its signal aborts. */
  abandon(delivery: LeaseDelivery, reason: unknown): void;
}

/**
 * One claimed row of the lease form; its signal exists once something asks for it. Its settlement
 * goes straight to what writes it: an ack (or a drop) joins the subscription's next batched ack
 * statement (`LeaseAcks`, below), with no promise made; a release, a dead-letter move and a
 * transactional handler's ack run on their own (`LeaseSettlements`), each carrying the lease's token.
 */
export class LeaseDelivery implements ClaimedDelivery {
  readonly #writes: LeaseSettlements;
  readonly id: unknown;
  readonly row: RawRow;
  readonly attempt: number | undefined;
  readonly lease: KeptLease;
  /** Transactional mode: the handler's transaction, until the settlement ends it. */
  handlerTransaction: HandlerTransaction | undefined;
  slot = -1;
  /** Given up at the end of the shutdown grace: a later settlement fails with `Closed`. */
  abandoned = false;

  constructor(writes: LeaseSettlements, id: unknown, row: RawRow, attempt: number | undefined, lease: KeptLease) {
    this.#writes = writes;
    this.id = id;
    this.row = row;
    this.attempt = attempt;
    this.lease = lease;
  }

  get signal(): AbortSignal {
    return this.lease.signal;
  }

  abortedWith(): { readonly reason: unknown } | undefined {
    return this.lease.abortedWith();
  }

  leaseDeadline(): Date {
    return this.lease.held;
  }

  settle(settlement: Settlement, done: SettleDone): void {
    const finish = batchedFinishOf(settlement);
    // The hot path: a plain ack joins the next batched statement (which refuses it once the broker closed).
    if (finish !== undefined && this.handlerTransaction === undefined && !this.abandoned && !this.#writes.followed(settlement)) this.#writes.acks.ackThen(this.lease, finish, done);
    else
      this.#writes.settle(this, settlement).then(
        () => {
          this.#writes.committed(this.id);
          done.settled(true);
        },
        (error: unknown) => done.settled(false, error),
      );
  }

  openHandlerTransaction(): Promise<AnyTransaction> {
    return this.#writes.openHandlerTransaction(this);
  }

  writeProgress(progress: string): Promise<void> {
    return this.#writes.writeProgress(this.lease, progress, this.handlerTransaction);
  }

  interrupt(reason: unknown): void {
    this.lease.interrupt(reason);
  }

  lapsedBeforeStart(): boolean {
    return this.#writes.keeper.lapsed(this.lease);
  }

  abandon(reason: unknown): void {
    this.abandoned = true;
    this.#writes.abandon(this, reason);
  }
}

/** Every ack of a statement took. */
const ALL = Symbol("all acked");
/**
 * Batched acks written at once at most: one. The next statement gathers the acks that finish while
 * one runs, and goes as soon as it returns. Two side by side deleted from the same pages and cost
 * the server more per row than the latency they hid (Postgres lease b64-w8: one ack statement and
 * two claims ahead beat two and four by about 12%); where an ack is a transaction of two statements
 * (MySQL/MariaDB), two would lock each other's pages.
 */
const ACK_STATEMENTS_IN_FLIGHT = 1;

interface PendingAck {
  readonly lease: KeptLease;
  readonly kind: "ack" | "drop";
  readonly done: SettleDone;
}

/**
 * Coalesces the acks of one subscription's deliveries into one statement each time: the dialect's
 * `lease.settleAckMany`, which deletes (or marks processed) every row still holding its token and,
 * on Postgres and SQLite, returns the ids that took; on MySQL/MariaDB `lease.selectHeld` first
 * locks the rows still held, then the same write runs, in one short transaction. The SQL of each
 * is pinned by the kysely-dialects snapshot tests (`statements-lease.test.ts`).
 *
 * An ack waits one turn of the event loop, or, when as many statements as allowed are already
 * running, until one returns: whatever gathered meanwhile, up to `MAX_ACKS_PER_STATEMENT`, goes in the next
 * statement. Every ack still carries its own token; the ids the statement names (or, on
 * MySQL/MariaDB, the rows the locking select found) are the acks that took, and each other
 * one fails on its own with `LeaseLost`, having deleted nothing.
 */
export class LeaseAcks {
  readonly #setup: ClaimSetup;
  readonly #keeper: LeaseKeeper;
  #pending: PendingAck[] = [];
  /** Statements running. */
  #flights = 0;
  #scheduled = false;

  constructor(setup: ClaimSetup, keeper: LeaseKeeper) {
    this.#setup = setup;
    this.#keeper = keeper;
  }

  /**
   * Queues the ack of `lease`; `done` is told once the statement wrote it, or why not (`LeaseLost`,
   * `Closed`, the statement's error). No promise: an ack costs one queued entry.
   */
  ackThen(lease: KeptLease, kind: "ack" | "drop", done: SettleDone): void {
    lease.settling = true; // no new extension of a lease about to be acked (one running now is awaited before the write)
    this.#pending.push({ lease, kind, done });
    this.#setup.database.activity.touch();
    this.#schedule();
  }

  /** Tells one ack's owner; a callback that throws is a bug in the caller, logged, never a reason to leave the others untold. */
  #tell(a: PendingAck, ok: boolean, error?: unknown): void {
    try {
      a.done.settled(ok, error);
    } catch (thrown) {
      this.#setup.logger.error({ ...errorFields(thrown), id: a.lease.id }, "an ack's completion callback threw");
    }
  }

  #schedule(): void {
    if (this.#scheduled || this.#flights >= ACK_STATEMENTS_IN_FLIGHT) return;
    this.#scheduled = true;
    // One turn of the event loop: the deliveries that finish in this turn join the statement.
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#pending.length === 0) return;
    const batch = this.#pending.length <= MAX_ACKS_PER_STATEMENT ? this.#pending : this.#pending.slice(0, MAX_ACKS_PER_STATEMENT);
    this.#pending = batch === this.#pending ? [] : this.#pending.slice(MAX_ACKS_PER_STATEMENT);
    this.#flights++;
    void this.#write(batch).finally(() => {
      this.#flights--;
      // What gathered while the statement ran goes at once: no extra turn.
      if (this.#pending.length > 0 && this.#flights < ACK_STATEMENTS_IN_FLIGHT) this.#flush();
    });
    if (this.#pending.length > 0) this.#schedule();
  }

  async #write(batch: readonly PendingAck[]): Promise<void> {
    const { isClosed } = this.#setup;
    if (isClosed()) {
      for (const a of batch) {
        this.#keeper.release(a.lease);
        this.#tell(a, false, closedBeforeLeaseSettlement(deliveryPlace(this.#setup, a.lease.id)));
      }
      return;
    }
    let acked: Set<string> | typeof ALL;
    try {
      // A running extension may move the tokens: wait for it, so each ack carries the current one.
      await this.#keeper.beginSettleMany(batch.map((a) => a.lease));
      acked = await this.#run(batch.map((a) => ({ id: a.lease.id, held: a.lease.held })));
    } catch (error) {
      // A lost connection: the leases still hold for a while, so the acks go again on a fresh one.
      const retry = isSqlInboxError(error) ? [] : batch.filter((a) => leaseHoldsFor(a.lease, this.#setup.clock.now()) && !isClosed());
      for (const a of batch) {
        if (retry.includes(a)) continue;
        this.#keeper.release(a.lease);
        this.#tell(a, false, error);
      }
      if (retry.length > 0) {
        this.#setup.logger.warn({ ...errorFields(error), acks: retry.length }, "ack statement failed; retrying on a fresh connection while the leases hold");
        setTimeout(() => {
          for (const a of retry) this.#pending.push(a);
          this.#schedule();
        }, SETTLE_RETRY_MS);
      }
      return;
    }
    for (const a of batch) {
      this.#keeper.release(a.lease);
      if (acked === ALL || acked.has(a.lease.key)) this.#tell(a, true);
      else this.#tell(a, false, leaseNotHeld(a.kind, a.lease.held, deliveryPlace(this.#setup, a.lease.id)));
    }
  }

  /** Runs the batched ack; returns the keys of the ids it acked, or `ALL` (the usual case: no lease was lost). */
  async #run(held: readonly HeldLease[]): Promise<Set<string> | typeof ALL> {
    const { database, spec, clock, precision } = this.#setup;
    const { lease: statements, capabilities } = database.dialect;
    const idName = spec.id.name;
    const now = clock.now();
    if (capabilities.updateReturning) {
      const result = await database.execute("settle", statements.settleAckMany(spec, held, now, precision));
      // Each row matches its own token once: as many rows as leases means every one took.
      if (result.rows.length === held.length) return ALL;
      return new Set(result.rows.map((r) => keyOf(r[idName])));
    }
    // No RETURNING (MySQL/MariaDB): lock the rows that still hold their tokens, then delete exactly those.
    return database.transaction("settle", async (trx) => {
      const found = await database.execute("settle", statements.selectHeld(spec, held, precision), trx);
      const all = found.rows.length === held.length;
      const keys = all ? ALL : new Set(found.rows.map((r) => keyOf(r[idName])));
      const mine = keys === ALL ? held : held.filter((h) => keys.has(keyOf(h.id)));
      if (mine.length === 0) return keys;
      const result = await database.execute("settle", statements.settleAckMany(spec, mine, now, precision), trx);
      const written = Number(result.numAffectedRows ?? 0n);
      if (written !== mine.length) {
        // The locked rows cannot change under us; a mismatch means the table is not what we think: fail the whole batch.
        throw batchedAckShort(written, mine.length, { subscription: this.#setup.subscription, table: spec.table });
      }
      return keys;
    });
  }
}
