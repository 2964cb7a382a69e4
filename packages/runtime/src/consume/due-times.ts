/** Due times kept at most: past it the latest are let go (the poll still finds their rows). */
export const MAX_DUE_TIMES = 1000;

/**
 * The times (ms on the app's clock) at which rows this process knows of come due, soonest first:
 * a delay it wrote (a settlement's `retryAfter`, a publish's `runAt` or `delay`). Kept sorted in
 * a short array: one insertion per delayed row, one look at the head per timer.
 */
export class DueTimes {
  readonly #times: number[] = [];

  /** The soonest time, when any. */
  get soonest(): number | undefined {
    return this.#times[0];
  }

  get size(): number {
    return this.#times.length;
  }

  add(at: number): void {
    const times = this.#times;
    // Binary search for the first time later than `at`; equal times are kept once.
    let lo = 0;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((times[mid] as number) <= at) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && times[lo - 1] === at) return;
    if (lo >= MAX_DUE_TIMES) return;
    times.splice(lo, 0, at);
    if (times.length > MAX_DUE_TIMES) times.pop();
  }

  /** Forgets every time at or before `now` (their rows are due); returns whether any was. */
  dropThrough(now: number): boolean {
    const times = this.#times;
    let n = 0;
    while (n < times.length && (times[n] as number) <= now) n++;
    if (n > 0) times.splice(0, n);
    return n > 0;
  }

  clear(): void {
    this.#times.length = 0;
  }
}
