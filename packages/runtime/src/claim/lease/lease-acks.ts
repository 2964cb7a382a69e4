import { isSqlInboxError } from "@sqlinbox/core/internal";
import type { HeldLease } from "@sqlinbox/kysely-dialects";
import { batchedAckShort, closedBeforeLeaseSettlement, leaseNotHeld } from "../../errors.js";
import { keyOf, leaseHoldsFor, SETTLE_RETRY_MS, type KeptLease, type LeaseKeeper } from "./lease-keeper.js";
import { errorFields } from "../../logger.js";
import { deliveryPlace, type ClaimSetup } from "../claim-strategy.js";

/** Acks written by one statement at most: 2 parameters each, far below every engine's limit (SQLite 3.32+: 32,766). */
export const MAX_ACKS_PER_STATEMENT = 512;
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

/** Told once an ack is written (`ok`), or why not. Called synchronously from the statement's end: it must not throw. */
export type AckDone = (ok: boolean, error?: unknown) => void;

interface PendingAck {
  readonly lease: KeptLease;
  readonly kind: "ack" | "drop";
  readonly done: AckDone;
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

  /** Queues the ack of `lease`; resolves once written, rejects with `LeaseLost` or the statement's error. */
  ack(lease: KeptLease, kind: "ack" | "drop"): Promise<void> {
    return new Promise<void>((resolve, reject) => this.ackThen(lease, kind, (ok, error) => (ok ? resolve() : reject(error))));
  }

  /**
   * `ack` without a promise: `done` is called once the statement settled it. A delivery's hot
   * path settles through this, so an ack costs one queued entry, not a chain of promises.
   */
  ackThen(lease: KeptLease, kind: "ack" | "drop", done: AckDone): void {
    lease.settling = true; // no new extension of a lease about to be acked (one running now is awaited before the write)
    this.#pending.push({ lease, kind, done });
    this.#setup.database.activity.touch();
    this.#schedule();
  }

  /** Tells one ack's owner; a callback that throws is a bug in the caller, logged, never a reason to leave the others untold. */
  #tell(a: PendingAck, ok: boolean, error?: unknown): void {
    try {
      a.done(ok, error);
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
