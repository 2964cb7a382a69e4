import type { AdvisoryStatements, SlotPlace } from "@sqlinbox/kysely-dialects";
import type { KeyRegistry } from "../held/key-registry.js";
import type { CapHold, CapPlace, CapRun } from "./max-in-work.js";

/** Where an advisory claim's slot locks are: on the row's session (the lock names' database read once), or counted in this process. */
export type SlotLockPlace = { readonly session: AdvisoryStatements; readonly lockDatabase: () => Promise<string> } | { readonly process: KeyRegistry };

/**
 * The advisory form's hold on a cap: one of `n` slot locks (`<cap>:<i>`), tried without waiting on
 * the row's own session from a random slot on, so claims side by side rarely try the same one. A
 * session lock ends with its session, so a crash gives the slot back at once; a delivery gives it
 * back with its key. Where advisory keys live in the process (SQLite, one process per file) the
 * database's registry counts the slots instead.
 */
export class SlotLocks implements CapHold {
  readonly n: number;
  readonly #place: SlotPlace;
  readonly #where: SlotLockPlace;

  constructor(n: number, place: SlotPlace, where: SlotLockPlace) {
    this.n = n;
    this.#place = place;
    this.#where = where;
  }

  async take(run: CapRun, want: number): Promise<readonly CapPlace[]> {
    const where = this.#where;
    if ("process" in where) return Array.from({ length: where.process.count(this.#place.name, this.n, want) }, () => this.#place.name);
    const database = await where.lockDatabase();
    const first = Math.floor(Math.random() * this.n);
    const taken: string[] = [];
    for (let i = 0; i < this.n && taken.length < want; i++) {
      const slot = `${this.#place.name}:${(first + i) % this.n}`;
      if (Number((await run(where.session.tryLock(slot, database))).rows[0]?.locked ?? 0) === 1) taken.push(slot);
    }
    return taken;
  }

  /** Unlocks each slot on its session, before the session goes back to the pool; or counts them out of this process. */
  async release(run: CapRun, places: readonly CapPlace[]): Promise<void> {
    const where = this.#where;
    if ("process" in where) {
      where.process.uncount(this.#place.name, places.length);
      return;
    }
    const database = await where.lockDatabase();
    for (const slot of places) await run(where.session.unlock(String(slot), database));
  }

  /** A slot admitted each row. */
  async kept(_run: CapRun, taken: number): Promise<number> {
    return taken;
  }
}
