import type { AnyKysely } from "../drivers/database.js";
import { CommitWatch } from "./after-commit.js";

/**
 * A subscription's wake-up: at once (no argument), or when a row comes due at `dueAt` (ms since
 * the epoch: a publish's run-at).
 */
export type Wake = (dueAt?: number) => void;

/** A registered wake-up and the group its subscription claims (`undefined`: the whole table). */
interface GroupWake {
  readonly wake: Wake;
  readonly group: string | undefined;
  /** Whether its subscription waits for work now (absent: never counts as waiting). */
  readonly waiting: (() => boolean) | undefined;
}

/**
 * The wake-ups of subscriptions in this process, by the table they consume: a publish or a
 * notification calls them. A wake that names a group (the rows went to that group of a table with a
 * group column) reaches only that group's subscriptions; one without a group reaches them all.
 */
export class Wakes {
  readonly #byTable = new Map<string, Set<GroupWake>>();
  readonly #commits = new CommitWatch();

  /** Registers `wake` for `table` (for `group`'s rows alone, when given; `waiting`: whether it waits for work now); returns its removal. */
  add(table: string, wake: Wake, group?: string, waiting?: () => boolean): () => void {
    const set = this.#byTable.get(table) ?? new Set();
    const entry: GroupWake = { wake, group, waiting };
    set.add(entry);
    this.#byTable.set(table, set);
    return () => set.delete(entry);
  }

  /** Whether a subscription of one of `tables` waits for work now: a wake would start a claim. */
  anyWaiting(tables: readonly string[]): boolean {
    for (const table of tables) for (const entry of this.#byTable.get(table) ?? []) if (entry.waiting?.() === true) return true;
    return false;
  }

  /** Wakes the subscriptions of `table` (of `group` alone, when given): now, or when a row comes due at `dueAt`. */
  wake(table: string, dueAt?: number, group?: string): void {
    for (const entry of this.#byTable.get(table) ?? []) if (group === undefined || entry.group === undefined || entry.group === group) entry.wake(dueAt);
  }

  /**
   * A publish's wake: at once when it committed (no `via`, a Kysely instance, a transaction that
   * already ended); after the commit when `via` is a transaction still open (its rows are invisible
   * to a claim until then); never when that transaction rolls back. With `dueAt` (a run-at) the
   * wake waits for that time too.
   */
  wakeAfterCommit(table: string, via: AnyKysely | undefined, dueAt?: number, group?: string): void {
    // One wake per table, group and due time: a later publish in the same transaction keeps an earlier one's.
    const key = `${table}\u0000${group ?? ""}\u0000${dueAt ?? ""}`;
    const state = this.#commits.afterCommit(via, key, () => this.wake(table, dueAt, group));
    if (state === "none" || state === "committed") this.wake(table, dueAt, group);
  }
}
