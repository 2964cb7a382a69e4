import type { Clock, Timer } from "../clock.js";

/**
 * Whether a subscription may start claims now: not before it starts, never after it stops, and not
 * while it waits out the poll interval after a claim came back short (a wake ends the wait at once).
 * Counts wakes, so a claim that came back short knows whether a publish happened while it ran.
 */
export class PollGate {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  #state: "new" | "open" | "closed" = "new";
  #timer: Timer | undefined;
  #wakes = 0;
  #paused = false;

  constructor(clock: Clock, intervalMs: number) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
  }

  /** Claims may start now. */
  get open(): boolean {
    return this.#state === "open" && this.#timer === undefined && !this.#paused;
  }

  /** Paused (its route is paused in the control table): no claims until `resume`. */
  get paused(): boolean {
    return this.#paused;
  }

  /** No claims until `resume`; a poll wait under way ends. */
  pause(): void {
    this.#paused = true;
    this.#cancel();
  }

  resume(): void {
    this.#paused = false;
  }

  get closed(): boolean {
    return this.#state === "closed";
  }

  /** Wakes so far: compare before and after a claim. */
  get wakes(): number {
    return this.#wakes;
  }

  start(): void {
    if (this.#state === "new") this.#state = "open";
  }

  /** A publish in this process: the poll wait ends now. */
  wake(): void {
    this.#wakes++;
    this.#cancel();
  }

  /** Waits the poll interval, then calls `then` (unless a wake or a close came first, or a wait is under way). */
  wait(then: () => void): void {
    if (this.#state === "closed" || this.#timer !== undefined) return;
    this.#timer = this.#clock.setTimer(this.#intervalMs, () => {
      this.#timer = undefined;
      then();
    });
  }

  /** No more claims, ever. */
  close(): void {
    this.#state = "closed";
    this.#cancel();
  }

  #cancel(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
