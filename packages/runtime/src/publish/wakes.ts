/** The wake-ups of subscriptions in this process, by the table they consume: a publish or a notification calls them. */
export class Wakes {
  readonly #byTable = new Map<string, Set<() => void>>();

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
}
