/** A cancellable timer handed out by a {@link Clock}. */
export interface Timer {
  cancel(): void;
}

/**
 * The one source of time of the runtime: claims, lease deadlines, extensions, polling and
 * handler sleeps all read it, so a test can pause it and move it forward (`TestApp.start`).
 */
export interface Clock {
  now(): Date;
  /** Runs `fn` once `ms` have passed on this clock. */
  setTimer(ms: number, fn: () => void): Timer;
  /** Resolves after `ms` on this clock; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Resolves after `ms` of `clock`, early (without error) when `wake` is called or `signal` aborts. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The real clock: `Date.now()` and `setTimeout`. */
export class SystemClock implements Clock {
  now(): Date {
    return new Date();
  }
  setTimer(ms: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
}

export const systemClock: Clock = new SystemClock();

/** Durations in milliseconds, for readable call sites: `lease(minutes(1))`. */
export const seconds = (n: number): number => n * 1000;
export const minutes = (n: number): number => n * 60_000;
export const hours = (n: number): number => n * 3_600_000;
export const days = (n: number): number => n * 86_400_000;
