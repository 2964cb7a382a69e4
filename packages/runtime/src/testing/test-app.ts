import { Activity } from "../activity.js";
import type { App, RunningApp } from "../app.js";
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { StatementKind } from "../drivers/database.js";
import { runningBrokers, startWith } from "../internal.js";
import type { Logger } from "../logger.js";
import type { HandlerOutcome } from "../declare/outcome.js";
import type { Subscriber } from "../declare/subscriber.js";
import type { DeliveryObserver } from "../consume/subscription.js";
import { MemoryLogger } from "./memory-logger.js";
import { PausedClock } from "./paused-clock.js";

/** One delivery as a test sees it. */
export interface CallRecord {
  readonly subscription: string;
  readonly id: unknown;
  readonly attempt: number | undefined;
  readonly payload: unknown;
  /** Set once the delivery was settled (or its settlement failed). */
  outcome?: HandlerOutcome;
  /** The settlement's error (`LeaseLost`, `Closed`), when it failed. */
  error?: unknown;
  /** Whether `ctx.signal` had aborted when the delivery settled. */
  signalAborted?: boolean;
}

export interface TestAppOptions {
  /** Forward log records to this logger too (they are always kept in `testApp.logs`). */
  readonly logger?: Logger;
  /** Start on this paused clock (share one between apps of one test). */
  readonly clock?: PausedClock;
}

type SubscriberRef = Subscriber | string;
const nameOf = (ref: SubscriberRef): string => (typeof ref === "string" ? ref : ref.name);

/**
 * Runs an app for a test. `TestApp.start` pauses its clock: `advance(ms)` moves it, running
 * each timer as the clock reaches it (lease extensions, poll waits, handler sleeps) and letting
 * the work it starts finish before the next. `TestApp.startLive` runs on the real clock.
 *
 * @example
 * const t = await TestApp.start(app)
 * await t.publish("reports", { title: "Q3" })
 * await t.advance(minutes(5))
 * t.assertCalledOnce(render)
 * await t.stop()
 */
export class TestApp {
  readonly clock: Clock;
  readonly logs: MemoryLogger;
  readonly #running: RunningApp;
  readonly #activity: Activity;
  readonly #paused: PausedClock | undefined;
  readonly #calls: CallRecord[];

  private constructor(running: RunningApp, clock: Clock, paused: PausedClock | undefined, activity: Activity, logs: MemoryLogger, calls: CallRecord[]) {
    this.#running = running;
    this.clock = clock;
    this.#paused = paused;
    this.#activity = activity;
    this.logs = logs;
    this.#calls = calls;
  }

  /** Starts `app` on a paused clock (starting at the real time now, or the given clock). */
  static async start(app: App, options: TestAppOptions = {}): Promise<TestApp> {
    return TestApp.#start(app, options.clock ?? new PausedClock(), options);
  }

  /** Starts `app` on the real clock. */
  static async startLive(app: App, options: Omit<TestAppOptions, "clock"> = {}): Promise<TestApp> {
    return TestApp.#start(app, undefined, options);
  }

  static async #start(app: App, paused: PausedClock | undefined, options: TestAppOptions): Promise<TestApp> {
    const calls: CallRecord[] = [];
    const logs = new MemoryLogger(options.logger);
    const activity = new Activity();
    const observer: DeliveryObserver = {
      delivered: (e) => void calls.push({ subscription: e.subscription, id: e.id, attempt: e.attempt, payload: e.payload }),
      settled: (e) => {
        const record = [...calls].reverse().find((c) => c.subscription === e.subscription && c.id === e.id && c.outcome === undefined);
        if (record === undefined) return;
        record.outcome = e.outcome;
        record.signalAborted = e.signalAborted;
        if (e.error !== undefined) record.error = e.error;
      },
    };
    const clock = paused ?? systemClock;
    const running = await app[startWith]({ clock, pausedClock: paused !== undefined, logger: logs, observer, activity });
    const testApp = new TestApp(running, clock, paused, activity, logs, calls);
    await testApp.settle();
    return testApp;
  }

  /**
   * Moves the paused clock by `ms`: each timer due on the way fires at its own time, and the
   * work it starts (claims, extensions, handlers up to their next wait) settles before the next.
   */
  async advance(ms: number): Promise<void> {
    const clock = this.#paused;
    if (clock === undefined) throw new Error("advance() needs a paused clock: use TestApp.start, not startLive");
    const target = clock.now().getTime() + ms;
    await this.settle();
    for (;;) {
      const next = clock.nextDue();
      if (next === undefined || next > target) break;
      clock.fireDue(next);
      await this.settle();
    }
    clock.fireDue(target);
    await this.settle();
  }

  /**
   * Waits until the app's database work is done and nothing moved for a few turns of the event
   * loop: what the last publish or clock step started has run up to its next wait.
   */
  async settle(timeoutMs = 15_000): Promise<void> {
    const started = Date.now();
    let quiet = 0;
    while (quiet < 5) {
      const version = this.#activity.version;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.#activity.pending === 0 && this.#activity.version === version) quiet++;
      else quiet = 0;
      if (Date.now() - started > timeoutMs) throw new Error(`the app did not settle within ${timeoutMs} ms (${this.#activity.pending} statements running)`);
    }
  }

  /** Publishes through the app's broker that declares `route`, then settles. */
  async publish(route: string, payload: unknown): Promise<void> {
    await this.#running.publish(route, payload);
    await this.settle();
  }

  /** The deliveries of a subscriber (or of a subscription name), in order. */
  calls(ref: SubscriberRef): CallRecord[] {
    return this.#calls.filter((c) => c.subscription === nameOf(ref));
  }

  /** The outcomes a subscriber's deliveries settled with. */
  outcomes(ref: SubscriberRef): HandlerOutcome[] {
    return this.calls(ref).flatMap((c) => (c.outcome ? [c.outcome] : []));
  }

  /** Throws unless the subscriber was called exactly once (with `payload`, when given); returns that call. */
  assertCalledOnce(ref: SubscriberRef, payload?: unknown): CallRecord {
    const calls = this.calls(ref);
    if (calls.length !== 1) {
      throw new Error(
        `expected subscriber "${nameOf(ref)}" to be called once, it was called ${calls.length} times${calls.length ? `: ${JSON.stringify(calls.map((c) => c.payload))}` : ""}`,
      );
    }
    const call = calls[0] as CallRecord;
    if (payload !== undefined && JSON.stringify(call.payload) !== JSON.stringify(payload)) {
      throw new Error(`subscriber "${nameOf(ref)}" was called with ${JSON.stringify(call.payload)}, expected ${JSON.stringify(payload)}`);
    }
    return call;
  }

  /**
   * Makes this app's statements of the given kinds fail as if the database were unreachable
   * (`"extend"`: the lease keeper cannot reach it). Returns the function that ends the fault.
   */
  failStatements(kinds: StatementKind | readonly StatementKind[], error: () => Error = () => new Error("database unreachable (simulated by the test)")): () => void {
    const set = new Set(typeof kinds === "string" ? [kinds] : kinds);
    const databases = (runningBrokers.get(this.#running) ?? []).flatMap((s) => (s.database ? [s.database] : []));
    for (const db of databases) db.fault = (kind) => (set.has(kind) ? error() : undefined);
    return () => {
      for (const db of databases) db.fault = undefined;
    };
  }

  /** Live mode: polls `predicate` on the real clock until it holds. */
  async waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition"): Promise<void> {
    const started = Date.now();
    while (!(await predicate())) {
      if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Stops the app gracefully; on a paused clock, the grace period passes as the clock is advanced. */
  async stop(): Promise<void> {
    const stopping = this.#running.stop();
    if (this.#paused) {
      let done = false;
      void stopping.finally(() => (done = true));
      await this.settle();
      while (!done && this.#paused.nextDue() !== undefined) {
        this.#paused.fireDue(this.#paused.nextDue() as number);
        await this.settle();
      }
    }
    await stopping;
  }
}
