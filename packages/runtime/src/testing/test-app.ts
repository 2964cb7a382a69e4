import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { Activity } from "../activity.js";
import type { App, RunningApp } from "../app.js";
import type { Clock } from "../clock.js";
import { systemClock } from "../clock.js";
import type { StatementKind } from "../drivers/database.js";
import { noRouteInApp } from "../errors.js";
import { runningBrokers, startWith } from "../internal.js";
import type { Logger } from "../logger.js";
import type { HandlerOutcome } from "../declare/outcome.js";
import type { DeliveredOf } from "../declare/queue-rules.js";
import type { Subscriber } from "../declare/subscriber.js";
import type { DeliveryObserver } from "../consume/subscription.js";
import type { BrokerParts } from "../publish/broker.js";
import type { Published } from "../publish/publisher.js";
import type { KnownRoute, PublishOptions, PublishOptionsFor, PublishPayload } from "../publish/sql-broker.js";
import { rowOptions } from "../publish/publish-rows.js";
import { MemoryLogger } from "./memory-logger.js";
import { PausedClock } from "./paused-clock.js";
import { performJob, type PerformedJob, type PerformOptions } from "./perform-job.js";
import { PublishedLog, shown, type PartialPayload, type PublishedJob, type PublishedMatch } from "./published-log.js";

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

type Routes = Record<string, AnyInboxSpec>;
/** The table description of a subscriber (of each, for a union of subscribers). */
type SpecOfSubscriber<Sub> = Sub extends Subscriber<infer S> ? S : never;
/** A route of the app's type (any name when the app's type knows none). */
type TestRoute<R extends Routes, N extends string> = [keyof R] extends [never] ? unknown : KnownRoute<R, N>;

/** How far `drain` may go before it gives up (and throws, naming what is left). */
export interface DrainOptions {
  /** Only the subscription of this route (default: every subscription of the app). */
  readonly route?: string;
  /** At most this many deliveries (default 1,000). */
  readonly maxDeliveries?: number;
  /** At most this much time on the paused clock (default one hour). */
  readonly maxMs?: number;
}

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
export class TestApp<R extends Routes = Routes> {
  readonly clock: Clock;
  readonly logs: MemoryLogger;
  readonly #running: RunningApp;
  readonly #activity: Activity;
  readonly #paused: PausedClock | undefined;
  readonly #calls: CallRecord[];
  readonly #published: PublishedLog;
  #performed = 0;

  private constructor(running: RunningApp, clock: Clock, paused: PausedClock | undefined, activity: Activity, logs: MemoryLogger, calls: CallRecord[], published: PublishedLog) {
    this.#running = running;
    this.clock = clock;
    this.#paused = paused;
    this.#activity = activity;
    this.logs = logs;
    this.#calls = calls;
    this.#published = published;
  }

  /** Starts `app` on a paused clock (starting at the real time now, or the given clock). */
  static async start<R extends Routes>(app: App<R>, options: TestAppOptions = {}): Promise<TestApp<R>> {
    return TestApp.#start(app, options.clock ?? new PausedClock(), options);
  }

  /** Starts `app` on the real clock. */
  static async startLive<R extends Routes>(app: App<R>, options: Omit<TestAppOptions, "clock"> = {}): Promise<TestApp<R>> {
    return TestApp.#start(app, undefined, options);
  }

  static async #start<R extends Routes>(app: App<R>, paused: PausedClock | undefined, options: TestAppOptions): Promise<TestApp<R>> {
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
    const published = new PublishedLog(() => clock.now());
    const running = await app[startWith]({ clock, pausedClock: paused !== undefined, logger: logs, observer, publishes: published.observe, activity });
    const testApp = new TestApp<R>(running, clock, paused, activity, logs, calls, published);
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

  /**
   * Publishes through the app's broker that routes `route`, with any publish option the route's table
   * takes (`runAt`, `delay`, `priority`, `key`, `headers`, `columns`, `via`, …), then settles.
   */
  async publish<N extends string, DB = unknown, Routed extends Routes = R>(
    this: TestApp<Routed>,
    route: N & TestRoute<Routed, N>,
    payload: PublishPayload<Routed, N>,
    options?: PublishOptionsFor<Routed, N, DB>,
  ): Promise<Published> {
    const parts = this.#partsOf(route);
    const { via, key, ...rest } = (options ?? {}) as PublishOptions;
    const published = await parts.publisher.publish(route, payload, via as never, rowOptions(rest, key === undefined ? undefined : [key]));
    await this.settle();
    return published;
  }

  /** The jobs published to `route` while the app ran, in order, from any publisher (see `PublishedJob`). */
  published<N extends string, Routed extends Routes = R>(this: TestApp<Routed>, route: N & TestRoute<Routed, N>): PublishedJob<PublishPayload<Routed, N>>[] {
    return this.#published.jobs(route) as PublishedJob<PublishPayload<Routed, N>>[];
  }

  /**
   * Throws unless a job was published to `route` whose payload has every part of `payload` (nested keys,
   * whole arrays, values; `undefined`: any payload) and whose publish options match `match`; with
   * `match.times`, exactly that many. The message names what was expected and lists what was published.
   * Returns the matching jobs.
   */
  assertPublished<N extends string, Routed extends Routes = R>(
    this: TestApp<Routed>,
    route: N & TestRoute<Routed, N>,
    payload?: PartialPayload<PublishPayload<Routed, N>>,
    match?: PublishedMatch,
  ): PublishedJob<PublishPayload<Routed, N>>[] {
    return this.#published.assertPublished(route, payload, match) as PublishedJob<PublishPayload<Routed, N>>[];
  }

  /** Throws if a job was published to `route` whose payload has every part of `payload` (any job: no `payload`), listing them. */
  assertNotPublished<N extends string, Routed extends Routes = R>(
    this: TestApp<Routed>,
    route: N & TestRoute<Routed, N>,
    payload?: PartialPayload<PublishPayload<Routed, N>>,
  ): void {
    this.#published.assertNotPublished(route, payload);
  }

  /**
   * Runs `sub`'s handler once, now, on `payload` (no row is claimed or written): the payload is encoded
   * and decoded as a published one (a Standard Schema validates it), and the context is a delivery's
   * (`keys.attempt`, `keys.headers`, `ctx.id`, `ctx.signal`, the app's clock; on a transactional queue a
   * real transaction, committed on an ack and rolled back otherwise). Resolves to the outcome, or to
   * what the queue's `onError` policy makes of a throw (with the error). The subscriber's route must be
   * routed by one of the app's brokers. On the paused clock a handler that waits on `ctx.sleep` waits
   * until the test advances the clock.
   */
  async performJob<Sub extends Subscriber>(sub: Sub, payload: DeliveredOf<SpecOfSubscriber<Sub>>, options: PerformOptions<SpecOfSubscriber<Sub>> = {}): Promise<PerformedJob> {
    const id = options.id ?? ++this.#performed;
    return performJob(sub as Subscriber, payload, options as PerformOptions, { parts: this.#partsOf(sub.name), clock: this.clock, id });
  }

  /**
   * Runs every job of the app's subscriptions (of `route`'s alone, when given) until none is left:
   * on the paused clock it settles, counts the rows still to finish (not processed; of the route's
   * group on a table with a group column), and moves the clock to the next timer (a poll, a retry's
   * or a run-at's due time, a handler's sleep), again and again. Resolves to the deliveries that ran
   * (those in work as it started, and every later one), in order; throws past `maxDeliveries` or
   * `maxMs`, naming how many rows are left.
   */
  async drain(options: DrainOptions = {}): Promise<CallRecord[]> {
    const clock = this.#paused;
    if (clock === undefined) throw new Error("drain() needs a paused clock: use TestApp.start, not startLive");
    const { route, maxDeliveries = 1000, maxMs = 3_600_000 } = options;
    const names = this.#running.subscriptions.map((s) => s.name).filter((name) => route === undefined || name === route);
    if (names.length === 0) throw new Error(`drain(): no subscription of this app consumes "${route}"`);
    // What ran: the deliveries still in work as the drain starts, and every one after.
    const settledBefore = new Set(this.#calls.filter((c) => c.outcome !== undefined || c.error !== undefined));
    const started = clock.now().getTime();
    const ran = (): CallRecord[] => this.#calls.filter((c) => !settledBefore.has(c) && names.includes(c.subscription));
    for (;;) {
      await this.settle();
      const left = await this.#rowsLeft(names);
      const calls = ran();
      if (left === 0 && calls.every((c) => c.outcome !== undefined || c.error !== undefined)) return calls;
      const stop = (why: string) =>
        new Error(`drain() ${why} with ${left} row${left === 1 ? "" : "s"} of ${names.map((n) => `"${n}"`).join(", ")} still to finish, after ${calls.length} deliveries`);
      if (calls.length >= maxDeliveries) throw stop(`reached maxDeliveries (${maxDeliveries})`);
      const next = clock.nextDue();
      if (next === undefined) throw stop("found no timer to move the clock to");
      if (next - started > maxMs) throw stop(`reached maxMs (${maxMs} ms on the paused clock)`);
      clock.fireDue(next);
    }
  }

  /** The rows still to be finished (not processed) of each named subscription: its group's on a table with a group column. */
  async #rowsLeft(names: readonly string[]): Promise<number> {
    let left = 0;
    for (const name of names) {
      const parts = this.#partsOf(name);
      const spec = parts.routes.route(name)?.description;
      if (spec === undefined) continue;
      const database = parts.connection.require(name);
      const query = database.dialect.observe.queueDepth(spec, spec.group === undefined ? {} : { group: name });
      left += Number((await database.execute("observe", query)).rows[0]?.depth ?? 0);
    }
    return left;
  }

  /** The app's broker that routes `route`. */
  #partsOf(route: string): BrokerParts {
    const all = runningBrokers.get(this.#running) ?? [];
    const parts = all.find((p) => p.routes.route(route) !== undefined);
    if (parts === undefined) throw noRouteInApp(route);
    return parts;
  }

  /** The deliveries of a subscriber (or of a subscription name), in order. */
  calls(ref: SubscriberRef): CallRecord[] {
    return this.#calls.filter((c) => c.subscription === nameOf(ref));
  }

  /** The outcomes a subscriber's deliveries settled with. */
  outcomes(ref: SubscriberRef): HandlerOutcome[] {
    return this.calls(ref).flatMap((c) => (c.outcome ? [c.outcome] : []));
  }

  /** Throws unless the subscriber was called exactly `times` times, listing the payloads it was called with; returns the calls. */
  assertCalled(ref: SubscriberRef, times: number): CallRecord[] {
    const calls = this.calls(ref);
    if (calls.length === times) return calls;
    const listed = calls.length === 0 ? "" : `: ${calls.map((c) => shown(c.payload)).join(", ")}`;
    throw new Error(
      `expected subscriber "${nameOf(ref)}" to be called ${times} time${times === 1 ? "" : "s"}, it was called ${calls.length} time${calls.length === 1 ? "" : "s"}${listed}`,
    );
  }

  /** Throws if the subscriber was called, listing the payloads it was called with. */
  assertNotCalled(ref: SubscriberRef): void {
    const calls = this.calls(ref);
    if (calls.length > 0)
      throw new Error(
        `expected subscriber "${nameOf(ref)}" not to be called, it was called ${calls.length} time${calls.length === 1 ? "" : "s"}: ${calls.map((c) => shown(c.payload)).join(", ")}`,
      );
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
    const databases = (runningBrokers.get(this.#running) ?? []).flatMap((s) => (s.connection.database ? [s.connection.database] : []));
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
