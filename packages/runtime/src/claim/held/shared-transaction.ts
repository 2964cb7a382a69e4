import type { ErrorPlace } from "@sqlinbox/core/internal";
import { batchRolledBack } from "../../errors.js";

const ignore = (): void => undefined;

/** What a shared transaction runs on its connection; every statement is in the transaction. */
export interface SharedTransactionWork {
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** Takes back the attempt of rows that left without reaching a handler. */
  uncount?(ids: readonly unknown[]): Promise<unknown>;
  /** Acks these rows in as few statements as it takes (`ack` defers each row's ack to this). */
  ackMany?(ids: readonly unknown[]): Promise<unknown>;
}

/**
 * One row-lock transaction that several deliveries share (`.sharedTransaction()`, or a batch
 * handler): each delivery writes its settlement into it as it finishes, except an ack, whose row
 * joins one statement that acks them all once the last delivery arrived, just before the commit
 * (nothing commits before then anyway). A write or the commit that fails, or a delivery given back
 * unsettled, rolls the whole transaction back: every row comes back, its attempt not spent, and
 * each settlement fails with `BatchRolledBack`. A row that never reached a handler (a stop with
 * rows still buffered) leaves instead: its attempt is taken back in the transaction, which
 * commits the others' settlements as usual (or rolls back, when no row of it reached a handler).
 */
export class SharedTransaction {
  readonly rows: number;
  readonly #work: SharedTransactionWork;
  /** Rows that left without reaching a handler. */
  readonly #left: unknown[] = [];
  /** Rows acked, written together before the commit. */
  #acked: unknown[] = [];
  #waiting: number;
  /** The last settlement written or being written: the next one starts after it. */
  #writes: Promise<void> = Promise.resolve();
  #failure: { readonly cause: unknown } | undefined;
  readonly #done: Promise<void>;
  #finish!: (failure: { readonly cause: unknown } | undefined) => void;

  constructor(rows: number, work: SharedTransactionWork) {
    this.rows = rows;
    this.#waiting = rows;
    this.#work = work;
    this.#done = new Promise<{ readonly cause: unknown } | undefined>((resolve) => (this.#finish = resolve)).then((failure) => {
      if (failure !== undefined) throw failure.cause;
    });
    this.#done.catch(() => undefined); // each settlement reads the failure itself
  }

  /** Deliveries not yet arrived (settled or given back). */
  get waiting(): number {
    return this.#waiting;
  }

  /** Settles once the transaction committed or rolled back; never rejects. */
  get ended(): Promise<void> {
    return this.#done.catch(ignore);
  }

  /** True once a write failed or a delivery was given back: what is still written rolls back anyway. */
  get failed(): boolean {
    return this.#failure !== undefined;
  }

  /**
   * An ack: the row joins the one statement that acks every acked row of the transaction before it
   * commits. Waits for the shared commit; rejects with `BatchRolledBack` when it did not commit.
   */
  ack(id: unknown, kind: string, place: ErrorPlace): Promise<void> {
    if (this.#work.ackMany === undefined) return Promise.reject(new Error("this shared transaction acks row by row: settle each ack"));
    if (this.#failure === undefined) this.#acked.push(id);
    this.#arrived();
    return this.#committed(kind, place);
  }

  /**
   * Writes one delivery's settlement (unless the transaction already failed) and waits for the
   * shared commit; rejects with `BatchRolledBack` when the transaction did not commit.
   */
  async settle(kind: string, place: ErrorPlace, write: () => Promise<unknown>): Promise<void> {
    if (this.#failure === undefined) {
      // One write at a time, each after the last: the transaction's one connection runs them in turn anyway;
      // Kysely's single-connection provider would wake every waiting query at each one's end (k waiting: k² wakes),
      // and node-postgres deprecates a query sent while another runs on the client. Acks, the many, go together at the end.
      const written = this.#writes.then(() => (this.#failure === undefined ? write() : undefined));
      this.#writes = written.then(ignore, ignore);
      try {
        await written;
      } catch (cause) {
        this.#failure ??= { cause };
      }
    }
    this.#arrived();
    await this.#committed(kind, place);
  }

  async #committed(kind: string, place: ErrorPlace): Promise<void> {
    try {
      await this.#done;
    } catch (cause) {
      throw batchRolledBack(kind, this.rows, cause, place);
    }
  }

  /** A delivery leaves unsettled (abandoned, closed, stopped): the transaction rolls back once every row arrived, or now when `now`. */
  giveBack(reason: unknown, now = false): Promise<void> {
    this.#failure ??= { cause: reason };
    if (now) void this.#work.rollback();
    this.#arrived();
    return this.ended;
  }

  /** A row never handed to a handler leaves: its attempt is taken back before the commit. */
  leave(id: unknown): Promise<void> {
    this.#left.push(id);
    this.#arrived();
    return this.ended;
  }

  #arrived(): void {
    if (--this.#waiting > 0) return;
    void this.#end();
  }

  async #end(): Promise<void> {
    // No row reached a handler: nothing to keep, the rollback takes every attempt back.
    if (this.#left.length === this.rows) this.#failure ??= { cause: new Error("no row of the claim reached a handler") };
    if (this.#failure === undefined) {
      const { ackMany, uncount } = this.#work;
      try {
        // Every other write has ended (each delivery arrives after its own); these go last, then the commit.
        await this.#writes;
        if (this.#acked.length > 0 && ackMany !== undefined) {
          const acked = this.#acked;
          this.#acked = [];
          await ackMany(acked);
        }
        if (this.#left.length > 0 && uncount !== undefined) await uncount(this.#left);
        await this.#work.commit();
      } catch (cause) {
        this.#failure = { cause };
      }
    }
    if (this.#failure !== undefined) await this.#work.rollback().catch(() => undefined);
    this.#finish(this.#failure);
  }
}
