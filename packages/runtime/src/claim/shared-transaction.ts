import type { ErrorPlace } from "@sqlinbox/core/internal";
import { batchRolledBack } from "../errors.js";

const ignore = (): void => undefined;

/**
 * One row-lock transaction that several deliveries share (`.sharedTransaction()`, or a batch
 * handler): each delivery writes its settlement into it as it finishes; the last one to arrive
 * commits for all. A write or the commit that fails, or a delivery given back unsettled, rolls
 * the whole transaction back: every row comes back, its attempt not spent, and each settlement
 * fails with `BatchRolledBack`. A row that never reached a handler (a stop with rows still
 * buffered) leaves instead: its attempt is taken back in the transaction, which commits the
 * others' settlements as usual (or rolls back, when no row of it reached a handler).
 */
export class SharedTransaction {
  readonly rows: number;
  readonly #commit: () => Promise<void>;
  readonly #rollback: () => Promise<void>;
  readonly #uncount: (ids: readonly unknown[]) => Promise<unknown>;
  /** Rows that left without reaching a handler. */
  readonly #left: unknown[] = [];
  #waiting: number;
  /** Serial writes: the last settlement written or being written, the next one starts after it. */
  #writes: Promise<void> = Promise.resolve();
  readonly #serial: boolean;
  #failure: { readonly cause: unknown } | undefined;
  readonly #done: Promise<void>;
  #finish!: (failure: { readonly cause: unknown } | undefined) => void;

  /**
   * `serial`: each write starts once the last one ended. A transaction on Kysely's
   * single-connection provider needs it (that provider wakes every waiting query at each one's
   * end: k waiting, k² wakes); statements on a held session do not, since the driver runs its
   * connection's statements in turn, in the order they were sent, and the chain's promises
   * would only delay each write by the hops between one statement's end and the next one's start.
   */
  constructor(
    rows: number,
    commit: () => Promise<void>,
    rollback: () => Promise<void>,
    uncount: (ids: readonly unknown[]) => Promise<unknown> = () => Promise.resolve(),
    serial = true,
  ) {
    this.rows = rows;
    this.#serial = serial;
    this.#waiting = rows;
    this.#commit = commit;
    this.#rollback = rollback;
    this.#uncount = uncount;
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
   * Writes one delivery's settlement (unless the transaction already failed) and waits for the
   * shared commit; rejects with `BatchRolledBack` when the transaction did not commit.
   */
  async settle(kind: string, place: ErrorPlace, write: () => Promise<unknown>): Promise<void> {
    if (this.#failure === undefined) {
      let written: Promise<unknown>;
      if (this.#serial) {
        written = this.#writes.then(() => (this.#failure === undefined ? write() : undefined));
        this.#writes = written.then(ignore, ignore);
      } else written = write();
      try {
        await written;
      } catch (cause) {
        this.#failure ??= { cause };
      }
    }
    this.#arrived();
    try {
      await this.#done;
    } catch (cause) {
      throw batchRolledBack(kind, this.rows, cause, place);
    }
  }

  /** A delivery leaves unsettled (abandoned, closed, stopped): the transaction rolls back once every row arrived, or now when `now`. */
  giveBack(reason: unknown, now = false): Promise<void> {
    this.#failure ??= { cause: reason };
    if (now) void this.#rollback();
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
      try {
        if (this.#left.length > 0) {
          const left = this.#left;
          await this.#writes.then(() => this.#uncount(left));
        }
        await this.#commit();
      } catch (cause) {
        this.#failure = { cause };
      }
    }
    if (this.#failure !== undefined) await this.#rollback().catch(() => undefined);
    this.#finish(this.#failure);
  }
}
