import type { InboxDescription } from "@sqlinbox/core/internal";
import type { Clock } from "../../clock.js";
import type { Database } from "../../drivers/database.js";
import type { ClaimedDelivery, ClaimProfile, ClaimStrategy } from "../claim-strategy.js";
import { WrappedClaim } from "./wrapped-claim.js";

/**
 * A cap on rows in work on a lease table, counted from the table itself: a row is in work while
 * its lease is ahead. A claim counts the live leases and claims at most `n` minus them, then counts
 * again once its own rows are committed, and gives back (unstarted, attempt not spent) what it took
 * beyond the cap.
 *
 * Why the second count holds the cap without a lock: every delivery in work at some instant was
 * kept by a claim whose second count ran after that claim committed. Take the latest such count
 * among the deliveries in work: every other one was committed before it, still live, and counted;
 * and that claim kept only `n` minus the others it counted. So at most `n` are in work. Two claims
 * side by side may both give back rows (the cap is held, some work waits a poll).
 *
 * A process killed mid-handler holds its rows' leases until they expire: its share of the cap
 * comes back then.
 */
export class LeaseCap extends WrappedClaim {
  readonly profile: ClaimProfile;
  readonly #database: Database;
  readonly #spec: InboxDescription;
  readonly #group: { readonly group?: string };
  readonly #clock: Clock;
  readonly #n: number;
  /** The last short claim was cut by the cap (a full claim leaves it as it was). */
  #atCap = false;

  constructor(inner: ClaimStrategy, setup: { database: Database; spec: InboxDescription; group: { readonly group?: string }; clock: Clock }, n: number) {
    super(inner);
    this.#database = setup.database;
    this.#spec = setup.spec;
    this.#group = setup.group;
    this.#clock = setup.clock;
    this.#n = n;
    // Rows claimed ahead would count as in work while they wait: claim only for free workers.
    this.profile = Object.freeze({ ...inner.profile, pace: inner.profile.pace === "ahead" ? "perWorker" : inner.profile.pace });
  }

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const room = this.#n - (await this.#live());
    if (room <= 0) {
      this.#atCap = true;
      return [];
    }
    const claimed = await this.inner.claim(Math.min(limit, room));
    if (claimed.length === 0) {
      this.#atCap = false; // short because nothing was claimable
      return claimed;
    }
    const others = (await this.#live()) - claimed.length;
    const keep = Math.max(0, this.#n - others);
    // A short claim says why: cut by the cap (less room than wanted, and the claim filled it; or rows given back), or the queue.
    if (Math.min(keep, claimed.length) < limit) this.#atCap = (room < limit && claimed.length === room) || keep < claimed.length;
    if (keep >= claimed.length) return claimed;
    await this.inner.releaseUnstarted(claimed.slice(keep));
    return claimed.slice(0, keep);
  }

  async #live(): Promise<number> {
    const query = this.#database.dialect.flow.countLiveLeases(this.#spec, { now: this.#clock.now(), ...this.#group });
    const row = (await this.#database.execute("claim", query)).rows[0];
    return Number(row?.live ?? 0);
  }

  waitAfterShortMs(): number | undefined {
    return this.inner.waitAfterShortMs?.();
  }

  atCap(): boolean {
    return this.#atCap;
  }
}
