import { sleepOn, type Clock, type Timer } from "../clock.js";

interface PendingTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told: `TestApp.advance(ms)` runs its timers in due order,
 * setting the time to each one's due time first.
 */
export class PausedClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: PendingTimer[] = [];

  constructor(start: Date = new Date()) {
    this.#now = start.getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  setTimer(ms: number, fn: () => void): Timer {
    const timer: PendingTimer = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
        this.#timers = this.#timers.filter((t) => t !== timer);
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** The due time of the earliest timer, if any. */
  nextDue(): number | undefined {
    let next: PendingTimer | undefined;
    for (const t of this.#timers) if (!next || t.due < next.due || (t.due === next.due && t.seq < next.seq)) next = t;
    return next?.due;
  }

  /** Moves to `time` (never backwards) and fires the timers due by then, in order; returns how many fired. */
  fireDue(time: number): number {
    this.#now = Math.max(this.#now, time);
    const due = this.#timers.filter((t) => t.due <= this.#now).sort((a, b) => a.due - b.due || a.seq - b.seq);
    this.#timers = this.#timers.filter((t) => t.due > this.#now);
    for (const t of due) if (!t.cancelled) t.fn();
    return due.length;
  }

  /** Timers waiting. */
  get pending(): number {
    return this.#timers.length;
  }
}
