import type { AnyKysely } from "../drivers/database.js";
import { CommitWatch } from "./after-commit.js";

/** The wake-ups of subscriptions in this process, by the table they consume: a publish or a notification calls them. */
export class Wakes {
  readonly #byTable = new Map<string, Set<() => void>>();
  readonly #commits = new CommitWatch();

  /** Registers `wake` for `table`; returns its removal. */
  add(table: string, wake: () => void): () => void {
    const set = this.#byTable.get(table) ?? new Set();
    set.add(wake);
    this.#byTable.set(table, set);
    return () => set.delete(wake);
  }

  /** Wakes every subscription of `table`. */
  wake(table: string): void {
    for (const wake of this.#byTable.get(table) ?? []) wake();
  }

  /**
   * A publish's wake: at once when it committed (no `via`, a Kysely instance, a transaction that
   * already ended); after the commit when `via` is a transaction still open (its rows are invisible
   * to a claim until then); never when that transaction rolls back.
   */
  wakeAfterCommit(table: string, via: AnyKysely | undefined): void {
    const state = this.#commits.afterCommit(via, table, () => this.wake(table));
    if (state === "none" || state === "committed") this.wake(table);
  }
}
