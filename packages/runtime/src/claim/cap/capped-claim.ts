import type { ClaimedDelivery, ClaimProfile, ClaimStrategy } from "../claim-strategy.js";
import { WrappedClaim } from "../flow/wrapped-claim.js";
import type { CapRun, MaxInWork } from "./max-in-work.js";

/**
 * A claim strategy under a cap whose hold needs no place of the claim's own (the lease form's count
 * of live leases, `LeaseCount`): each claim takes the room the cap leaves, claims at most that many
 * rows, and once they are committed gives back, unstarted (attempt not spent), what the cap does not keep.
 */
export class CappedClaim extends WrappedClaim {
  readonly profile: ClaimProfile;
  readonly #cap: MaxInWork;
  readonly #run: CapRun;

  constructor(inner: ClaimStrategy, cap: MaxInWork, run: CapRun) {
    super(inner);
    this.#cap = cap;
    this.#run = run;
    // Rows claimed ahead would count as in work while they wait: claim only for free workers.
    this.profile = Object.freeze({ ...inner.profile, pace: inner.profile.pace === "ahead" ? "perWorker" : inner.profile.pace });
  }

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const room = (await this.#cap.take(this.#run, limit)).length;
    const claimed = room === 0 ? [] : await this.inner.claim(room);
    const kept = await this.#cap.kept(this.#run, claimed.length);
    this.#cap.ended({ wanted: limit, room, taken: claimed.length, kept });
    if (kept >= claimed.length) return claimed;
    await this.inner.releaseUnstarted(claimed.slice(kept), true);
    return claimed.slice(0, kept);
  }

  waitAfterShortMs(): number | undefined {
    return this.inner.waitAfterShortMs?.();
  }

  atCap(): boolean {
    return this.#cap.atCap();
  }
}
