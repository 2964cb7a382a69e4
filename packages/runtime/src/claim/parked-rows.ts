import type { Clock } from "../clock.js";

/** Ids parked at most: past it the soonest-due one is let go first (a NOT IN list stays short). */
const MAX_PARKED = 1000;

/**
 * Rows this process keeps out of its own claims until a time: how a delay is served on a table
 * with no column to store it (row lock or advisory without a retryAfter column). The row itself
 * is released at once, so it holds no worker, connection or lock meanwhile; other processes may
 * take it sooner.
 */
export class ParkedRows {
  readonly #clock: Clock;
  readonly #until = new Map<unknown, number>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  park(id: unknown, ms: number): void {
    this.#until.delete(id);
    this.#until.set(id, this.#clock.now().getTime() + ms);
    if (this.#until.size > MAX_PARKED) this.#letGoSoonest();
  }

  /** The ids parked now (the due ones are forgotten). */
  ids(): unknown[] {
    const now = this.#clock.now().getTime();
    const ids: unknown[] = [];
    for (const [id, until] of this.#until) {
      if (until <= now) this.#until.delete(id);
      else ids.push(id);
    }
    return ids;
  }

  /** True while `id` is parked (a candidate read before it was parked must not be taken). */
  has(id: unknown): boolean {
    const until = this.#until.get(id);
    return until !== undefined && until > this.#clock.now().getTime();
  }

  get size(): number {
    return this.#until.size;
  }

  #letGoSoonest(): void {
    let soonest: unknown;
    let at = Number.POSITIVE_INFINITY;
    for (const [id, until] of this.#until) {
      if (until < at) {
        at = until;
        soonest = id;
      }
    }
    this.#until.delete(soonest);
  }
}
