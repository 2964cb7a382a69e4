import type { CompiledQuery, QueryResult } from "kysely";

/** Runs a statement where a cap's places are held: a row-lock claim's transaction, an advisory row's session, the pool. */
export type CapRun = <R>(query: CompiledQuery<R>) => Promise<QueryResult<R>>;

/** One place a row in work keeps under a cap: a slot row's number, a slot lock's name, one of the room a lease count left. */
export type CapPlace = string | number;

/**
 * How a claim form holds its share of `maxInWork(n)`, across every process. Three holds implement it:
 * - `LeaseCount` (lease form): the live leases in the table are the rows in work; a crashed process's
 *   rows count until their lease expires;
 * - `SlotRows` (row lock): one of `n` slot rows, locked in the claim's transaction until it ends;
 * - `SlotLocks` (advisory): one of `n` slot locks on the row's own session (in this process where
 *   advisory keys live in it: SQLite), given back with the row's key.
 * Every place is taken without waiting.
 */
export interface CapHold {
  /** The cap: at most `n` rows in work. */
  readonly n: number;
  /** Places for up to `want` rows, held where `run` runs; fewer than `want`: the cap is full. */
  take(run: CapRun, want: number): Promise<readonly CapPlace[]>;
  /** Gives back places no row keeps any more, before where they are held ends or goes back to the pool (nothing where its end gives them back). */
  release(run: CapRun, places: readonly CapPlace[]): Promise<void>;
  /**
   * Once the claim that took `taken` rows committed: how many of them stay in work. A hold that
   * admitted each row by its place keeps them all; a count of the table's rows in work may find
   * that claims side by side overran the cap, and keeps fewer (the rest go back unstarted).
   */
  kept(run: CapRun, taken: number): Promise<number>;
}

/** One claim under a cap, as it ended: what it wanted, the room the cap gave, the rows it took and kept. */
export interface CappedClaimEnd {
  readonly wanted: number;
  readonly room: number;
  readonly taken: number;
  readonly kept: number;
}

/**
 * `maxInWork(n)`: at most `n` rows of a subscription in work at once, across every process. The
 * one home of the cap: each claim form reaches it through its hold (`CapHold`), and the cap says
 * whether the last claim was cut by it (`atCap`), so that a delivery of this process that ends
 * (freeing room) starts a claim at once instead of at the next poll.
 */
export class MaxInWork {
  readonly n: number;
  readonly #hold: CapHold;
  #full = false;

  constructor(hold: CapHold) {
    if (!Number.isInteger(hold.n) || hold.n < 1) throw new RangeError(`maxInWork must be a positive integer, got ${hold.n}`);
    this.n = hold.n;
    this.#hold = hold;
  }

  /** Places for up to `want` rows, held where `run` runs; fewer than `want`: the cap is full. */
  take(run: CapRun, want: number): Promise<readonly CapPlace[]> {
    return this.#hold.take(run, want);
  }

  /** Gives back places no row keeps any more. */
  release(run: CapRun, places: readonly CapPlace[]): Promise<void> {
    return places.length === 0 ? Promise.resolve() : this.#hold.release(run, places);
  }

  /** Once a claim of `taken` rows committed: how many stay in work. */
  kept(run: CapRun, taken: number): Promise<number> {
    return taken === 0 ? Promise.resolve(0) : this.#hold.kept(run, taken);
  }

  /**
   * A claim ended. Only a short one (fewer rows kept than wanted) says whether the cap cut it: it
   * did when the room it got was less than wanted and every place was used, or when rows went back;
   * otherwise the queue had no more rows. A full claim leaves it as it was.
   */
  ended(claim: CappedClaimEnd): void {
    if (claim.kept >= claim.wanted) return;
    this.#full = (claim.room < claim.wanted && claim.taken >= claim.room) || claim.kept < claim.taken;
  }

  /** The last short claim was cut by the cap. */
  atCap(): boolean {
    return this.#full;
  }
}
