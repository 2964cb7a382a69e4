import { MAX_ACKS_PER_STATEMENT } from "../claim-strategy.js";

/** What a key session runs on its one connection; each returns once its statement ended. */
export interface KeySessionWork {
  /** Finishes these rows (ack or drop) in one statement. */
  finishMany(ids: readonly unknown[]): Promise<unknown>;
  /** Takes back the attempt the take counted for rows that never reached a handler. */
  uncountMany(ids: readonly unknown[]): Promise<unknown>;
  /** Unlocks these keys in one statement: for each, whether the session still held it. */
  unlockMany(keys: readonly string[]): Promise<readonly boolean[]>;
  /** Gives the connection back to the pool (closed there when one of its statements failed). */
  release(): void;
  /** A failure that is not the caller's to hear (an uncount that failed: the row is back with its attempt spent). */
  warn(error: unknown, message: string): void;
  /** The session ended under the batch (its keys are free): said once, with how many rows had not ended. */
  lost(error: unknown, open: number): void;
}

/** One row's end, waiting for the session's next write. */
interface Arrival {
  readonly key: string;
  readonly id: unknown;
  /** `finish`: joins the one statement that finishes many; `write`: statements of its own (run first); `leave`: never started, its attempt taken back; `unlock`: nothing to write. */
  readonly kind: "finish" | "write" | "leave" | "unlock";
  readonly write?: () => Promise<void>;
  resolve(stillHeld: boolean): void;
  reject(error: unknown): void;
}

/**
 * The session of one advisory batch claim: one pool connection holding the locks of several keys,
 * one row in work per key, until each row has ended. The rows' ends that arrive in one turn of the
 * event loop (and while the last write runs) are written together, one statement at a time on the
 * connection: the statements of settlements that write their own (a retry's delay, a dead-letter
 * move), then one statement finishing every ack and drop, then one unlocking every key. The
 * connection goes back to the pool once every row has ended and its key is unlocked.
 *
 * A statement that fails fails the rows it wrote for; their keys are still unlocked (or, when the
 * session is gone, already free): their rows come back at once, as after a crash, attempt spent.
 * An unlock that fails, or finds a key no longer held, shows the session ended: from then on it is
 * `lost`, the batch's rows still waiting for a worker are not started (another claim may have taken
 * them already), and what arrives is answered at once, with no statement.
 */
export class KeySession {
  readonly #work: KeySessionWork;
  /** Rows whose end has not arrived yet. */
  #open: number;
  #arrivals: Arrival[] = [];
  #scheduled = false;
  /** The last write, run or queued: the next starts after it (one statement at a time on the connection). */
  #chain: Promise<void> = Promise.resolve();
  #released = false;
  #lost = false;

  constructor(rows: number, work: KeySessionWork) {
    this.#open = rows;
    this.#work = work;
  }

  /** True once a statement showed the session ended: its keys are free, its rows may be in other deliveries. */
  get lost(): boolean {
    return this.#lost;
  }

  /** True once the connection went back to the pool. */
  get released(): boolean {
    return this.#released;
  }

  /** The row is finished (ack or drop): joins the next statement that finishes many; resolves with whether its key was still held. */
  finish(id: unknown, key: string): Promise<boolean> {
    return this.#arrive(id, key, "finish");
  }

  /** The row's settlement writes statements of its own (`write`, run on this session before the gathered ones), then its key is unlocked. */
  write(id: unknown, key: string, write: () => Promise<void>): Promise<boolean> {
    return this.#arrive(id, key, "write", write);
  }

  /** The row ends with nothing to write (a retry at once, an abandon): its key is unlocked. */
  unlock(key: string): Promise<boolean> {
    return this.#arrive(undefined, key, "unlock");
  }

  /** The row never reached a handler: its attempt is taken back while its key is held, then the key is unlocked. */
  leave(id: unknown, key: string): Promise<boolean> {
    return this.#arrive(id, key, "leave");
  }

  /** Runs `statement` on the session between its gathered writes (a progress write): the connection runs one at a time. */
  run<R>(statement: () => Promise<R>): Promise<R> {
    const ran = this.#chain.then(statement);
    this.#chain = ran.then(
      () => undefined,
      () => undefined,
    );
    return ran;
  }

  #arrive(id: unknown, key: string, kind: Arrival["kind"], write?: () => Promise<void>): Promise<boolean> {
    if (this.#released) return Promise.reject(new Error("the advisory batch's session was given back to the pool"));
    return new Promise<boolean>((resolve, reject) => {
      this.#open--;
      this.#arrivals.push({ id, key, kind, write, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // One turn of the event loop: the rows that end in this turn share the statements.
    setImmediate(() => {
      void this.run(() => this.#flush());
    });
  }

  async #flush(): Promise<void> {
    // Arrivals from here on wait for the next flush, queued behind this one: they gather while it runs.
    this.#scheduled = false;
    const arrivals = this.#arrivals;
    this.#arrivals = [];
    const tell: (() => void)[] = [];
    for (let at = 0; at < arrivals.length; at += MAX_ACKS_PER_STATEMENT) tell.push(...(await this.#write(arrivals.slice(at, at + MAX_ACKS_PER_STATEMENT))));
    // Every row has ended: the connection goes back before the last rows hear of their end, so a
    // claim their end starts counts this session as closed.
    if (this.#open === 0 && this.#arrivals.length === 0 && !this.#released) {
      this.#released = true;
      this.#work.release();
    }
    for (const told of tell) told();
  }

  /** Writes the arrivals' ends; what to tell each once the session's state is settled. */
  async #write(arrivals: readonly Arrival[]): Promise<(() => void)[]> {
    if (this.#lost) {
      // Nothing to write on a session that ended: a row not started just ends; a settlement fails, its row already back.
      const ended = new Error("the session of the advisory batch had ended");
      return arrivals.map((a) => (a.kind === "leave" || a.kind === "unlock" ? () => a.resolve(false) : () => a.reject(ended)));
    }
    const failed = new Map<Arrival, unknown>();
    for (const a of arrivals) {
      if (a.write === undefined) continue;
      try {
        await a.write();
      } catch (error) {
        failed.set(a, error);
      }
    }
    const finished = arrivals.filter((a) => a.kind === "finish");
    if (finished.length > 0) {
      try {
        await this.#work.finishMany(finished.map((a) => a.id));
      } catch (error) {
        for (const a of finished) failed.set(a, error);
      }
    }
    const left = arrivals.filter((a) => a.kind === "leave");
    if (left.length > 0) {
      try {
        await this.#work.uncountMany(left.map((a) => a.id));
      } catch (error) {
        this.#work.warn(error, "taking back the attempts of rows that never started failed; they come back with it spent");
      }
    }
    // Every key is unlocked, its settlement written or not: a row whose write failed comes back as after a crash.
    let held: readonly boolean[];
    try {
      held = await this.#work.unlockMany(arrivals.map((a) => a.key));
    } catch (error) {
      this.#endSession(error);
      return arrivals.map((a) => () => a.reject(failed.has(a) ? failed.get(a) : error));
    }
    if (held.some((h) => !h)) this.#endSession(new Error("a key of the batch was no longer held by its session"));
    return arrivals.map((a, i) => (failed.has(a) ? () => a.reject(failed.get(a)) : () => a.resolve(held[i] === true)));
  }

  #endSession(error: unknown): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#work.lost(error, this.#open);
  }
}
