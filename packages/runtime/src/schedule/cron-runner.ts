import type { Clock, Timer } from "../clock.js";
import { errorFields, type Logger } from "../logger.js";
import type { CronDeclaration, CronTick } from "./cron.js";
import { cronKey, dueTicks } from "./cron-schedule.js";
import type { RecordSchedule } from "./record-schedule.js";

/** One tick to publish: its time, its key and payload, and the oldest tick any process may still publish (see `LATE_TICKS`). */
export interface TickToPublish {
  readonly at: Date;
  readonly key: string;
  readonly payload: unknown;
  readonly oldestLive: Date;
}

/** What a tick's publish did: `created` when its row was made here (and its id). */
export interface TickOutcome {
  readonly created: boolean;
  readonly id?: string;
}

/** Publishes one tick's payload with its key on the declaration's broker. */
export type PublishTick = (declaration: CronDeclaration, tick: TickToPublish) => Promise<TickOutcome>;

/** A timer waits at most this long before it looks at the clock again (a host clock set forward or back is seen within it). */
const MAX_WAIT_MS = 60_000;
/** A process that fell behind publishes at most this many passed ticks (or `catchUp`, when larger); older ones are skipped, with a warning. */
const LATE_TICKS = 10;
/** A failed publish of a tick is tried again after these waits, then given up with an error (other processes publish the same tick). */
const RETRY_WAITS_MS = [1000, 2000, 4000, 8000];

/**
 * Runs one schedule in this process: at start it publishes the `catchUp` most recent ticks, then
 * sleeps on the app's clock until each next tick and publishes it with the tick's dedup key. Every
 * process running the app does the same; the key makes each tick one row. Stops with the app.
 */
export class CronRunner {
  readonly #cron: CronDeclaration;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #publish: PublishTick;
  readonly #record: RecordSchedule;
  readonly #stopped = new AbortController();
  #timer: Timer | undefined;
  /** Ticks after this time are still to publish. */
  #after: Date;
  /** The publishes in order, one at a time: a stop waits for the one in flight. */
  #chain: Promise<void> = Promise.resolve();

  constructor(cron: CronDeclaration, clock: Clock, logger: Logger, publish: PublishTick, record: RecordSchedule = async () => {}) {
    this.#cron = cron;
    this.#clock = clock;
    this.#logger = logger;
    this.#publish = publish;
    this.#record = record;
    this.#after = clock.now();
  }

  /** Publishes the missed ticks `catchUp` asks for, then waits for the next tick. */
  start(): void {
    const now = this.#clock.now();
    const missed = this.#cron.schedule.missed(this.#cron.catchUp, now);
    this.#after = now;
    const next = this.#cron.schedule.next(now);
    this.#logger.info(
      {
        route: this.#cron.route,
        pattern: this.#cron.schedule.pattern,
        timeZone: this.#cron.schedule.timeZone,
        catchUp: missed.length,
        next: next?.toISOString(),
        // How long the route's handled rows must be kept for catch-up to hold (retain({ done }) at least this).
        ...(this.#cron.catchUp > 0 ? { retainDoneAtLeastMs: this.#cron.schedule.catchUpWindow(this.#cron.catchUp, now) } : {}),
      },
      "cron schedule started",
    );
    for (const tick of missed) this.#enqueue(tick);
    // The operator tools show the schedule and its next tick from the start (after the catch-up's ticks).
    this.#enqueueRecord(next, missed.at(-1));
    this.#arm();
  }

  /** No more ticks; resolves once the publish in flight, if any, settled (its retries are cut short). */
  stop(): Promise<void> {
    this.#stopped.abort();
    this.#timer?.cancel();
    return this.#chain;
  }

  #arm(): void {
    if (this.#stopped.signal.aborted) return;
    const tick = this.#cron.schedule.next(this.#after);
    if (tick === undefined) {
      this.#logger.info({ route: this.#cron.route, pattern: this.#cron.schedule.pattern }, "cron schedule has no more ticks");
      return;
    }
    const wait = tick.getTime() - this.#clock.now().getTime();
    this.#timer = this.#clock.setTimer(Math.min(wait, MAX_WAIT_MS), () => this.#wake());
  }

  /** Publishes every tick passed since the last one (usually one; several when the timer fired late), then waits again. */
  #wake(): void {
    if (this.#stopped.signal.aborted) return;
    const { due, skipped } = dueTicks(this.#cron.schedule, this.#after, this.#clock.now(), Math.max(LATE_TICKS, this.#cron.catchUp));
    if (skipped !== undefined) {
      this.#logger.warn(
        { route: this.#cron.route, from: skipped.from.toISOString(), to: skipped.to.toISOString() },
        "this process fell behind its cron schedule (a blocked event loop, a suspended host): ticks skipped here; another process may have published them",
      );
    }
    for (const tick of due) this.#enqueue(tick);
    const last = due.at(-1);
    if (last !== undefined) {
      this.#after = last;
      this.#enqueueRecord(this.#cron.schedule.next(last), last);
    }
    this.#arm();
  }

  #enqueue(at: Date): void {
    this.#chain = this.#chain.then(() => this.#publishTick(at));
  }

  /** After the publishes before it: the record never shows a tick as last before its row exists. */
  #enqueueRecord(next: Date | undefined, last: Date | undefined): void {
    this.#chain = this.#chain.then(() => (this.#stopped.signal.aborted ? undefined : this.#record(this.#cron, next, last, this.#clock.now())));
  }

  async #publishTick(at: Date): Promise<void> {
    const key = cronKey(this.#cron.route, at);
    const fields = { route: this.#cron.route, tick: at.toISOString(), key };
    for (let attempt = 0; ; attempt++) {
      if (this.#stopped.signal.aborted) return;
      try {
        const payload = typeof this.#cron.payload === "function" ? (this.#cron.payload as (tick: CronTick) => unknown)({ at, key }) : this.#cron.payload;
        // A process publishes ticks at most this far back (late ones, or `catchUp` at its start); one tick more for the clocks' differences.
        const oldestLive = this.#cron.schedule.missed(Math.max(LATE_TICKS, this.#cron.catchUp) + 2, at)[0] ?? at;
        const { id, created } = await this.#publish(this.#cron, { at, key, payload, oldestLive });
        this.#logger.debug({ ...fields, id, created }, created ? "cron tick published" : "cron tick already published");
        return;
      } catch (error) {
        const wait = RETRY_WAITS_MS[attempt];
        if (wait === undefined || this.#stopped.signal.aborted) {
          this.#logger.error({ ...fields, ...errorFields(error) }, "cron tick not published here: the publish failed; any other process running the app publishes the same tick");
          return;
        }
        this.#logger.warn({ ...fields, ...errorFields(error), retryInMs: wait }, "cron tick publish failed; trying again");
        await this.#clock.sleep(wait, this.#stopped.signal).catch(() => {});
      }
    }
  }
}
