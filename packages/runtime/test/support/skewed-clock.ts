import { sleepOn, type Clock, type Timer } from "../../src/clock.js";

/**
 * The system clock off by `skewMs` (positive: ahead), as on a host without NTP. Timers and sleeps
 * run in real time: a duration is the same on a skewed clock. The skew may change while it runs.
 */
export class SkewedClock implements Clock {
  skewMs: number;

  constructor(skewMs: number) {
    this.skewMs = skewMs;
  }

  now(): Date {
    return new Date(Date.now() + this.skewMs);
  }

  setTimer(ms: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
}
