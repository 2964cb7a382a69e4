/**
 * When a subscription may claim: its gate (`PollGate`: started, not stopped or paused, not waiting
 * out the poll interval) and, before each claim, one turn of the event loop when none ran for a
 * while (`eventLoopTurned`).
 */
import type { Clock, Timer } from "../clock.js";
import { DueTimes } from "./due-times.js";

/**
 * Whether a subscription may start claims now: not before it starts, never after it stops, and not
 * while it waits out the poll interval after a claim came back short (a wake ends the wait at once).
 * Counts wakes, so a claim that came back short knows whether a publish happened while it ran.
 *
 * It also keeps the times at which rows this process delayed come due, with one timer to the
 * soonest: when it fires, `onDue` wakes the subscription as a publish would.
 */
export class PollGate {
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #onDue: () => void;
  #state: "new" | "open" | "closed" = "new";
  #timer: Timer | undefined;
  #wakes = 0;
  readonly #due = new DueTimes();
  /** The one timer to the soonest due time, and that time. */
  #dueTimer: { readonly at: number; readonly timer: Timer } | undefined;
  #paused = false;

  /** `onDue` is called when a known due time comes: it wakes the subscription (`wake()` and a claim). */
  constructor(clock: Clock, intervalMs: number, onDue: () => void) {
    this.#clock = clock;
    this.#intervalMs = intervalMs;
    this.#onDue = onDue;
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

  /** Waiting out a poll interval: the last claim came back short, and only a wake or the timer starts the next. */
  get waiting(): boolean {
    return this.#timer !== undefined;
  }

  /** Wakes so far: compare before and after a claim. */
  get wakes(): number {
    return this.#wakes;
  }

  /** The soonest due time the timer waits for (ms on the clock), when any. */
  get nextDue(): number | undefined {
    return this.#dueTimer?.at;
  }

  start(): void {
    if (this.#state === "new") this.#state = "open";
  }

  /** A publish in this process: the poll wait ends now. */
  wake(): void {
    this.#wakes++;
    this.#cancel();
  }

  /**
   * A row comes due at `at` (ms on the clock): `onDue` is called then, poll wait or not. False
   * when `at` has passed already (the caller wakes now) or the gate is closed.
   */
  dueAt(at: number): boolean {
    const now = this.#clock.now().getTime();
    if (this.#state === "closed" || at <= now) return false;
    this.#due.add(at);
    this.#armDue(now);
    return true;
  }

  /**
   * Waits the poll interval (or `ms`, when the claim strategy knows when a claim can take rows again),
   * then calls `then` (unless a wake or a close came first, or a wait is under way).
   */
  wait(then: () => void, ms = this.#intervalMs): void {
    if (this.#state === "closed" || this.#timer !== undefined) return;
    this.#timer = this.#clock.setTimer(ms, () => {
      this.#timer = undefined;
      then();
    });
  }

  /** No more claims, ever. */
  close(): void {
    this.#state = "closed";
    this.#cancel();
    this.#dueTimer?.timer.cancel();
    this.#dueTimer = undefined;
    this.#due.clear();
  }

  #cancel(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** One timer, to the soonest due time: re-armed only when a sooner one arrives. */
  #armDue(now: number): void {
    const soonest = this.#due.soonest;
    if (soonest === undefined || (this.#dueTimer !== undefined && this.#dueTimer.at <= soonest)) return;
    this.#dueTimer?.timer.cancel();
    this.#dueTimer = { at: soonest, timer: this.#clock.setTimer(soonest - now, () => this.#dueNow()) };
  }

  /** The timer fired: forget what is due, arm the next, and wake (a timer that fired early only re-arms). */
  #dueNow(): void {
    this.#dueTimer = undefined;
    if (this.#state === "closed") return;
    const now = this.#clock.now().getTime();
    const due = this.#due.dropThrough(now);
    this.#armDue(now);
    if (due) this.#onDue();
  }
}

/**
 * A claim loop that never waits for I/O never lets the event loop turn. On SQLite (better-sqlite3
 * answers synchronously) a handler that returns `retry()` at once releases its row, and the next
 * claim takes it again, promise after promise: timers (the handler's own, a timeout, `stop()`'s
 * grace) and I/O would never run. Each claim asks `eventLoopTurned()` first. The first ask marks
 * the loop (and the time) and lets it go on; later asks go on too while the mark is younger than
 * `TURNLESS_MS`; an ask that finds an older mark — no macrotask ran for that long — waits for one
 * (`setImmediate`) before claiming. A server engine's claim waits for its socket, so the mark is
 * gone by the next claim and nothing waits.
 *
 * Why not wait at the second claim of a turn: on SQLite a busy queue claims several times a turn,
 * and each wait is a turn in which the acks gathered so far are written, so a turn per claim wrote
 * about 1.7 times as many ack statements, each with fewer rows (the lease drain, batch 64 × 8
 * workers: about 7% fewer jobs a second). A timer is late by at most `TURNLESS_MS` this way.
 */
const TURNLESS_MS = 5;

/** When the mark was set (`performance.now()`), or -1: a macrotask ran since the last claim. */
let markedAt = -1;

function unmark(): void {
  markedAt = -1;
}

/** Resolves at once when the event loop has turned in the last `TURNLESS_MS`; otherwise after one turn. */
export function eventLoopTurned(): Promise<void> | undefined {
  if (markedAt < 0) {
    markedAt = performance.now();
    setImmediate(unmark);
    return undefined;
  }
  if (performance.now() - markedAt < TURNLESS_MS) return undefined;
  return new Promise<void>((resolve) => setImmediate(resolve));
}
