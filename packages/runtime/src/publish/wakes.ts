import type { AnyKysely } from "../drivers/database.js";
import { CommitWatch } from "./after-commit.js";

/**
 * A subscription's wake-up: at once (no argument), or when a row comes due at `dueAt` (ms since
 * the epoch: a publish's run-at).
 */
export type Wake = (dueAt?: number) => void;

/** The wake-ups of subscriptions in this process, by the table they consume: a publish or a notification calls them. */
export class Wakes {
  readonly #byTable = new Map<string, Set<Wake>>();
  readonly #commits = new CommitWatch();

  /** Registers `wake` for `table`; returns its removal. */
  add(table: string, wake: Wake): () => void {
    const set = this.#byTable.get(table) ?? new Set();
    set.add(wake);
    this.#byTable.set(table, set);
    return () => set.delete(wake);
  }

  /** Wakes every subscription of `table`: now, or when a row comes due at `dueAt`. */
  wake(table: string, dueAt?: number): void {
    for (const wake of this.#byTable.get(table) ?? []) wake(dueAt);
  }

  /**
   * A publish's wake: at once when it committed (no `via`, a Kysely instance, a transaction that
   * already ended); after the commit when `via` is a transaction still open (its rows are invisible
   * to a claim until then); never when that transaction rolls back. With `dueAt` (a run-at) the
   * wake waits for that time too.
   */
  wakeAfterCommit(table: string, via: AnyKysely | undefined, dueAt?: number): void {
    // One wake per table and due time: a later publish in the same transaction keeps an earlier one's.
    const state = this.#commits.afterCommit(via, dueAt === undefined ? table : `${table}\u0000${dueAt}`, () => this.wake(table, dueAt));
    if (state === "none" || state === "committed") this.wake(table, dueAt);
  }
}
