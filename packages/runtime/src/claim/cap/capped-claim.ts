import type { ClaimedDelivery, ClaimProfile, ClaimStrategy } from "../claim-strategy.js";
import { WrappedClaim } from "../flow/wrapped-claim.js";
import type { CapRun, MaxInWork } from "./max-in-work.js";

/** After a claim gave rows back: the next one within this many ms, plus up to as many again at random. */
const GAVE_BACK_RETRY_MS = 50;

/**
 * A claim strategy under a cap whose hold needs no place of the claim's own (the lease form's count
 * of live leases, `LeaseCount`): each claim takes the room the cap leaves, claims at most that many
 * rows, and once they are committed gives back, unstarted (attempt not spent), what the cap does not keep.
 *
 * This process's claims run one after another: side by side, each would count the other's rows and
 * both could give back everything, leaving nothing in work and no delivery whose end wakes a claim.
 * Claims of other processes still can; a claim that gave rows back is followed by another soon
 * (`waitAfterShortMs`, jittered so that two processes do not meet again), not after the poll interval.
 */
export class CappedClaim extends WrappedClaim {
  readonly profile: ClaimProfile;
  readonly #cap: MaxInWork;
  readonly #run: CapRun;
  /** The claim under way in this process (claims wait for it). */
  #turn: Promise<unknown> = Promise.resolve();
  #gaveBack = false;

  constructor(inner: ClaimStrategy, cap: MaxInWork, run: CapRun) {
    super(inner);
    this.#cap = cap;
    this.#run = run;
    // Rows claimed ahead would count as in work while they wait: claim only for free workers.
    this.profile = Object.freeze({ ...inner.profile, pace: inner.profile.pace === "ahead" ? "perWorker" : inner.profile.pace });
  }

  claim(limit: number): Promise<ClaimedDelivery[]> {
    const claim = this.#turn.then(() => this.#claim(limit));
    this.#turn = claim.catch(() => {});
    return claim;
  }

  async #claim(limit: number): Promise<ClaimedDelivery[]> {
    this.#gaveBack = false;
    const room = (await this.#cap.take(this.#run, limit)).length;
    const claimed = room === 0 ? [] : await this.inner.claim(room);
    const kept = await this.#cap.kept(this.#run, claimed.length);
    this.#cap.ended({ wanted: limit, room, taken: claimed.length, kept });
    if (kept >= claimed.length) return claimed;
    this.#gaveBack = true;
    await this.inner.releaseUnstarted(claimed.slice(kept), true);
    return claimed.slice(0, kept);
  }

  waitAfterShortMs(): number | undefined {
    if (this.#gaveBack) return GAVE_BACK_RETRY_MS + Math.floor(Math.random() * GAVE_BACK_RETRY_MS);
    return this.inner.waitAfterShortMs?.();
  }

  atCap(): boolean {
    return this.#cap.atCap();
  }
}
