import type { Clock } from "../../clock.js";
import type { Logger } from "../../logger.js";
import { errorFields } from "../../logger.js";
import type { ClaimedDelivery, ClaimProfile, ClaimStrategy } from "../claim-strategy.js";
import { WrappedClaim } from "./wrapped-claim.js";
import type { RateSlots } from "./rate-slots.js";

/**
 * A claim strategy under a rate limit: each claim first takes free slots of the limit (one per row
 * it may start), claims at most that many rows, and after the hand-over stamps the slots that
 * admitted a start and frees the others. With no free slot it claims nothing and sleeps until the
 * window frees one (`waitAfterShortMs`), instead of polling.
 *
 * Rows are claimed only for free workers (never ahead), so each start follows its claim at once
 * and the slot's stamp, written after the hand-over, is never earlier than the start it counts.
 */
export class RateLimitedClaim extends WrappedClaim {
  readonly profile: ClaimProfile;
  readonly #slots: RateSlots;
  readonly #clock: Clock;
  readonly #logger: Logger;
  /** Set by a claim that found no free slot: how long until the window frees one. */
  #wait: number | undefined;
  readonly #isClosed: () => boolean;
  /** The inner strategy's cap, when it has one. */
  readonly atCap?: () => boolean;

  constructor(inner: ClaimStrategy, slots: RateSlots, setup: { readonly clock: Clock; readonly logger: Logger; readonly isClosed: () => boolean }) {
    super(inner);
    this.#slots = slots;
    this.#clock = setup.clock;
    this.#logger = setup.logger;
    this.#isClosed = setup.isClosed;
    const { atCap } = inner;
    if (atCap !== undefined) this.atCap = () => atCap.call(inner);
    // Claimed rows start at once: rows claimed ahead would start later, bunched with the next window's.
    const pace = inner.profile.pace === "ahead" || inner.profile.pace === "shared" ? "perWorker" : inner.profile.pace;
    this.profile = Object.freeze({ ...inner.profile, pace });
  }

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    this.#wait = undefined;
    const now = this.#clock.now().getTime();
    const { slots, reserve } = await this.#slots.take(limit, now);
    if (slots.length === 0) {
      this.#wait = await this.#slots.msUntilFree(now);
      return [];
    }
    let claimed: ClaimedDelivery[];
    try {
      // Fewer slots than wanted: the limit, not the queue, made this claim short. The next claim waits for
      // the window to free the next slot (read beside the claim, so the rows start no later), not the poll interval.
      if (slots.length < limit) {
        const [rows, wait] = await Promise.all([this.inner.claim(slots.length), this.#slots.msUntilFree(now)]);
        claimed = rows;
        if (claimed.length === slots.length) this.#wait = wait;
      } else claimed = await this.inner.claim(slots.length);
    } catch (error) {
      this.#settle([], slots, reserve);
      throw error;
    }
    // After the subscription handed the rows to their workers (this turn): the stamp is never before a start.
    setImmediate(() => this.#settle(slots.slice(0, claimed.length), slots.slice(claimed.length), reserve));
    return claimed;
  }

  /**
   * Stamps the slots of one claim. Unstamped (the broker closed first, or the statement failed), a slot
   * keeps its reservation: it frees one window after it, later than needed, never sooner.
   */
  #settle(used: readonly number[], unused: readonly number[], reserve: number): void {
    if (this.#isClosed()) return;
    this.#slots.settle(used, unused, reserve, this.#clock.now().getTime()).catch((error: unknown) => {
      if (!this.#isClosed()) this.#logger.warn({ ...errorFields(error) }, "rate limit slots not stamped; they free one window after their reservation");
    });
  }

  /**
   * After a claim the limit made short (no free slot, or fewer than wanted): until the window frees one;
   * otherwise what the strategy within says (a cap's), or the poll interval.
   */
  waitAfterShortMs(): number | undefined {
    const inner = this.inner.waitAfterShortMs?.();
    return this.#wait === undefined || inner === undefined ? (this.#wait ?? inner) : Math.min(this.#wait, inner);
  }
}
