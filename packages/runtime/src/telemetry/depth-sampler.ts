import type { ObservedSubscription } from "./telemetry.js";

/** A queue's depth is counted at most this often, however often a reader collects. */
export const DEPTH_SAMPLE_MS = 5_000;

/** The last depth counted per subscription, counted again once it is older than `DEPTH_SAMPLE_MS`. */
export class DepthSampler {
  readonly #subscriptions: readonly ObservedSubscription[];
  readonly #now: () => number;
  #last = new Map<ObservedSubscription, number>();
  #sampledAt = Number.NEGATIVE_INFINITY;
  #counting: Promise<void> | undefined;

  constructor(subscriptions: readonly ObservedSubscription[], now: () => number = () => performance.now()) {
    this.#subscriptions = subscriptions;
    this.#now = now;
  }

  /** The depths to report now; counts first when the last count is stale (a failed count keeps the last values). */
  async sample(): Promise<ReadonlyMap<ObservedSubscription, number>> {
    if (this.#now() - this.#sampledAt >= DEPTH_SAMPLE_MS) {
      this.#counting ??= this.#count().finally(() => {
        this.#counting = undefined;
      });
      await this.#counting;
    }
    return this.#last;
  }

  async #count(): Promise<void> {
    this.#sampledAt = this.#now();
    const counted = new Map<ObservedSubscription, number>();
    for (const sub of this.#subscriptions) {
      try {
        counted.set(sub, await sub.countDepth());
      } catch {
        const last = this.#last.get(sub);
        if (last !== undefined) counted.set(sub, last);
      }
    }
    this.#last = counted;
  }
}
