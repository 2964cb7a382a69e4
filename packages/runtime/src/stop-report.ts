import type { StopFate } from "./claim/form-facts.js";

/**
 * What `stop()` did, summed over every subscription and broker of the app.
 *
 * @example
 * const report = await running.stop()
 * if (report.rolledBack > 0) logger.warn(report, "deliveries cut short by the shutdown grace")
 */
export interface StopReport {
  /** Deliveries in work when the stop began that settled within the grace period. */
  readonly finished: number;
  /** Row-lock deliveries still in work when the grace ended: their transactions rolled back, the rows back at once, no attempt spent. */
  readonly rolledBack: number;
  /**
   * Rows handed back unsettled: claimed ahead and never started, or (lease, advisory) still in
   * work when the grace ended. A lease row returns when its lease expires, an advisory row at once.
   */
  readonly givenBack: number;
  /** Advisory locks released by the stop (deliveries still in work when the grace ended). */
  readonly locksReleased: number;
  /** Pool connections open when the pools were closed. */
  readonly connectionsClosed: number;
  /** Milliseconds the stop took. */
  readonly durationMs: number;
  /** True when a step did not finish within the grace (a database down or restarting): the stop went on without it. */
  readonly timedOut: boolean;
}

/** What one subscription's stop did. */
export interface SubscriptionStop {
  /** What the stop does to a delivery of this subscription's form still in work when the grace ends. */
  readonly stop: Pick<StopFate, "abandoned" | "releasesLock">;
  readonly finished: number;
  /** Claimed ahead and never started. */
  readonly unstarted: number;
  /** Still in work when the grace ended. */
  readonly abandoned: number;
  readonly timedOut: boolean;
}

/** Sums the subscriptions' stops into the app's report: an abandoned delivery counts by what its form's stop does to it. */
export function stopReportOf(stops: readonly SubscriptionStop[], connectionsClosed: number, durationMs: number, closeTimedOut: boolean): StopReport {
  let finished = 0;
  let rolledBack = 0;
  let givenBack = 0;
  let locksReleased = 0;
  let timedOut = closeTimedOut;
  for (const s of stops) {
    finished += s.finished;
    givenBack += s.unstarted;
    if (s.stop.abandoned === "rolledBack") rolledBack += s.abandoned;
    else givenBack += s.abandoned;
    if (s.stop.releasesLock) locksReleased += s.abandoned;
    timedOut ||= s.timedOut;
  }
  return Object.freeze({ finished, rolledBack, givenBack, locksReleased, connectionsClosed, durationMs, timedOut });
}

/** Resolves with `work`'s value, or with `undefined` once `ms` passed (the work goes on unwatched). */
export async function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
