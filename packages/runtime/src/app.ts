import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { Engine } from "@sqlinbox/kysely-dialects";
import type { Clock } from "./clock.js";
import type { Subscription } from "./consume/subscription.js";
import { noRouteInApp } from "./errors.js";
import { runningBrokers, startWith, type StartOverrides } from "./internal.js";
import { childLogger, consoleLogger, errorFields, type Logger } from "./logger.js";
import { brokerParts, type SqlBroker } from "./publish/sql-broker.js";
import { CronRunner } from "./schedule/cron-runner.js";
import { scheduleRecorder } from "./schedule/record-schedule.js";
import { tickPublisher } from "./schedule/publish-tick.js";
import { declareCron, type CronOptionsFor, type CronPayloadFor, type CronRouteAllowed } from "./schedule/cron.js";
import { BrokerScope, type BrokerUse } from "./startup/broker-scope.js";
import { warnRetention } from "./startup/retention.js";
import { startBroker, type Startup } from "./startup/start-broker.js";
import { startupRun, type AppParts, type Hook } from "./startup/startup-run.js";
import { stopReportOf, within, type StopReport } from "./stop-report.js";
import type { LeaseClock } from "./time/database-clock.js";
import type { AppEvents, JobListener, RegisteredListener } from "./hooks/lifecycle.js";
import type { Middleware, MiddlewareFor, MiddlewareUse } from "./hooks/middleware.js";
import type { PublishMiddleware } from "./publish/publish-hooks.js";

/** What an app is and how it runs. */
export interface AppInfo {
  readonly name: string;
  readonly version: string;
  /** Where events go (pino fits); default: a concise console logger. */
  readonly logger?: Logger;
  /** The clock all timing goes through; default: the system clock. */
  readonly clock?: Clock;
  /**
   * Whose time lease deadlines and due times (retry delays, `runAt`, `delay`) are judged on.
   * `"database"` (default): the app measures how far its clock is from each database's at startup and
   * every minute, and corrects by it, so a host with a skewed clock neither takes a row another process
   * holds nor keeps one it has lost; a skew over a second is logged as a warning. `"host"`: the app's
   * clock as it is; a start that finds it further from the database's than a quarter of the shortest
   * lease fails with `ClockSkew`.
   */
  readonly leaseClock?: LeaseClock;
  /** How long deliveries in work may still finish after a stop (default 10 s). */
  readonly shutdownGrace?: number;
  /**
   * OpenTelemetry spans and metrics when `@opentelemetry/api` is installed (default), recorded through the
   * same public hooks as `app.use`, `app.on` and `app.usePublish`; `false`: the API is never loaded, and none of it runs.
   */
  readonly telemetry?: boolean;
}

/** How long closing the pools may take past the grace before the stop goes on without them. */
const CLOSE_MARGIN_MS = 1000;

/** A started app. */
export interface RunningApp {
  /**
   * Graceful stop: stop claiming and extending, let deliveries in work finish within the grace
   * period, close. Returns within the grace (and a second to close the pools) even while the
   * database is down, with a report of what it did.
   */
  stop(): Promise<StopReport>;
  /** Publishes through the broker of this app that declares `route` (`NoRoute` when none does). */
  publish(route: string, payload: unknown): Promise<void>;
  /** The subscriptions running. */
  readonly subscriptions: readonly Subscription[];
}

/**
 * A service: startup and shutdown hooks, and the subscribers it runs on each broker.
 * Immutable: every method returns a new app.
 *
 * @example
 * const app = new App({ name: "reports", version: "0.1.0" })
 *   .onStartup(createTable)
 *   .withBroker(broker.route(RenderReport, "reports"), (b) => b.include(render))
 * await app.run() // until SIGINT/SIGTERM
 */
export class App<R extends Record<string, AnyInboxSpec> = Record<never, never>> {
  readonly info: AppInfo;
  /** What the builder methods added, each list in registration order. */
  readonly #parts: Required<AppParts>;

  constructor(info: AppInfo, parts: AppParts = {}) {
    this.info = Object.freeze({ ...info });
    this.#parts = { startup: [], shutdown: [], brokers: [], crons: [], middleware: [], listeners: [], publishMiddleware: [], ...parts };
    Object.freeze(this);
  }

  /** Runs before any broker connects (create tables here). */
  onStartup(hook: Hook): App<R> {
    return this.#with({ startup: [...this.#parts.startup, hook] });
  }

  /** Runs after the brokers closed. */
  onShutdown(hook: Hook): App<R> {
    return this.#with({ shutdown: [...this.#parts.shutdown, hook] });
  }

  /** Runs the subscribers `configure` includes on `broker` (after `broker.route(…)`); the app's type learns the broker's routes. */
  withBroker<R2 extends Record<string, AnyInboxSpec>, E extends Engine>(broker: SqlBroker<R2, E>, configure: (b: BrokerScope) => BrokerScope): App<R & R2> {
    const use: BrokerUse = { broker: broker as unknown as BrokerUse["broker"], scope: configure(BrokerScope.empty()) };
    return this.#with({ brokers: [...this.#parts.brokers, use] });
  }

  /**
   * Publishes one job to `route` at every tick of the cron `pattern` (5 fields, or 6 with seconds
   * first; read in `timeZone`, by default the host's), with the tick's dedup key
   * `cron:<route>:<tick time in UTC>`: every process that runs this app publishes each tick, and the
   * key makes it one row. No leader, no table of its own. The route's table needs a dedup key column.
   * Ticks missed while no process ran: none by default, or the `catchUp` most recent (a table with a
   * processedAt column). Call it after the `withBroker(…)` that routes `route`; a bad pattern or
   * time zone is a `Declaration` error here.
   *
   * @example
   * app.withBroker(broker.route(DailyReport, "daily-report"), (b) => b.include(render))
   *   .cron("daily-report", "0 6 * * *", (tick) => ({ day: tick.at.toISOString().slice(0, 10) }), { timeZone: "Europe/Berlin" })
   */
  cron<const N extends string, Routed extends Record<string, AnyInboxSpec> = R>(
    this: App<Routed>,
    route: N & CronRouteAllowed<Routed, N>,
    pattern: string,
    payload: CronPayloadFor<Routed, N>,
    options?: CronOptionsFor<Routed, N>,
  ): App<Routed> {
    const declared = declareCron(route, pattern, payload, (options ?? {}) as { catchUp?: number; timeZone?: string }, (name) => {
      for (const { broker } of this.#parts.brokers) {
        const spec = brokerParts(broker).routes.route(name);
        if (spec !== undefined) return { spec, broker };
      }
      return undefined;
    });
    return this.#with({ crons: [...this.#parts.crons, declared] });
  }

  /**
   * Runs `middleware` around each delivery (per row and per batch) of every route, or of `route`
   * alone (a name, or a prefix such as `"reports.*"`), typed by that route's table. The first
   * registered is the outermost. A middleware that throws counts as the handler throwing.
   *
   * @example
   * app.use(async (delivery, ctx, next) => {
   *   const started = performance.now();
   *   try { return await next(); } finally { metrics.record(delivery.route, performance.now() - started); }
   * })
   */
  use(middleware: Middleware): App<R>;
  use<const N extends keyof R & string>(route: N, middleware: MiddlewareFor<R[N]>): App<R>;
  use(...args: [Middleware] | [string, Middleware<never, never>]): App<R> {
    const use: MiddlewareUse = args.length === 1 ? { route: undefined, middleware: args[0] as MiddlewareUse["middleware"] } : { route: args[0], middleware: args[1] };
    return this.#with({ middleware: [...this.#parts.middleware, use] });
  }

  /**
   * Calls `listener` at each `event` of a job's life (`published`, `started`, `succeeded`,
   * `retried`, `snoozed`, `failed`, `deadLettered`, `dropped`, `cancelled`, `timedOut`, `leaseLost`,
   * `settlementFailed`, `undecodable`), in order, once per transition, or at each claim statement (`claimed`). A listener is never awaited: one that throws or hangs changes no job and
   * holds no worker (its failure is logged once).
   */
  on<E extends keyof AppEvents>(event: E, listener: JobListener<E>): App<R> {
    return this.#with({ listeners: [...this.#parts.listeners, { event, listener: listener as RegisteredListener["listener"] }] });
  }

  /**
   * Runs `middleware` around each publish through this app's brokers while it runs (`broker.publish`,
   * `publishMany`, a handler's publish, `app.cron`): before `next()` it may add headers to
   * `publish.headers` (on a table with a headers column), which every row of the call is written with;
   * `next()` resolves to the rows written, or rejects with the publish's error. The first registered
   * is the outermost. A middleware that throws fails the publish.
   *
   * @example
   * app.usePublish(async (publish, next) => {
   *   if (publish.headers !== undefined) publish.headers["tenant"] = currentTenant();
   *   return next();
   * })
   */
  usePublish(middleware: PublishMiddleware): App<R> {
    return this.#with({ publishMiddleware: [...this.#parts.publishMiddleware, middleware] });
  }

  /** Starts: hooks, connections, version and schema checks, then the subscriptions. */
  start(): Promise<RunningApp> {
    return this[startWith]({});
  }

  /** Starts and runs until SIGINT or SIGTERM, then stops gracefully. */
  async run(): Promise<void> {
    const running = await this.start();
    await new Promise<void>((resolve) => {
      const onSignal = (signal: NodeJS.Signals): void => {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
        void running.stop().then(
          () => resolve(),
          () => resolve(),
        );
        void signal;
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    });
  }

  /** @internal Startup in named steps: hooks, then per broker routes, connection, schemas, pool budget, subscriptions, listening; then claims start. */
  async [startWith](overrides: StartOverrides): Promise<RunningApp> {
    const logger = childLogger(overrides.logger ?? this.info.logger ?? consoleLogger(), { app: this.info.name });
    const { info } = this;
    const { middleware, listeners, publishMiddleware } = this.#parts;
    const run = await startupRun(
      { appName: info.name, clock: info.clock, leaseClock: info.leaseClock, telemetry: info.telemetry, middleware, listeners, publishMiddleware },
      overrides,
      logger,
    );
    logger.info({ version: this.info.version }, "app starting");
    for (const hook of this.#parts.startup) await hook();
    try {
      const names = new Set<string>();
      for (const use of this.#parts.brokers) await startBroker(run, use, names);
    } catch (error) {
      for (const free of run.held) free();
      for (const parts of run.opened) await parts.connection.close();
      logger.error(errorFields(error), "app failed to start");
      throw error;
    }
    const unobserve = run.telemetry.observe(run.observed);
    run.unsubscribe.push(unobserve);
    for (const s of run.subscriptions) s.start();
    for (const p of run.pruners) p.start();
    warnRetention(run.kept, this.#parts.crons, run.clock.now(), logger);
    // A schedule fires on the database's time of the broker that routes it, as its claims do.
    const publishTick = tickPublisher(logger);
    const recordSchedule = scheduleRecorder(run.appName, logger);
    const crons = this.#parts.crons.map((cron) => new CronRunner(cron, run.brokerClocks.get(cron.broker) ?? run.clock, logger, publishTick, recordSchedule));
    for (const c of crons) c.start();
    logger.info({ subscriptions: run.subscriptions.map((s) => s.name).join(",") }, "app started");
    return this.#running(run, crons);
  }

  /** The handle of a started app: its stop (claims, then grace, then connections, then hooks) and its publish. */
  #running(run: Startup, crons: readonly CronRunner[]): RunningApp {
    const { logger, opened, subscriptions } = run;
    const grace = this.info.shutdownGrace ?? 10_000;
    let stopping: Promise<StopReport> | undefined;
    const stop = (): Promise<StopReport> => {
      stopping ??= (async () => {
        logger.info({}, "app stopping: no more claims or extensions");
        const started = Date.now();
        const left = (): number => Math.max(0, grace - (Date.now() - started));
        // No more claims, from this very turn: a handler that calls stop() and returns at once starts
        // no further row. Every step that waits on the database waits at most what is left of the
        // grace (and the pools' close a moment more): a database down or restarting never holds the stop.
        const claiming = Promise.all(subscriptions.map((s) => s.stopClaiming(left())));
        // No more ticks nor prunes; a publish or a prune in flight ends before the pools close.
        await within(Promise.all([...crons.map((c) => c.stop()), ...run.pruners.map((p) => p.stop())]), left());
        const claims = await claiming;
        const stops = await Promise.all(subscriptions.map((s, i) => s.drain(left(), claims[i]?.unstarted ?? 0, claims[i]?.timedOut ?? false)));
        for (const off of run.unsubscribe) off();
        for (const free of run.held) free();
        let connectionsClosed = 0;
        let closeTimedOut = false;
        for (const { connection } of opened) {
          const closed = await within(connection.close(), left() + CLOSE_MARGIN_MS);
          if (closed === undefined) {
            closeTimedOut = true;
            logger.warn({ database: connection.source.label }, "the pool did not close within the grace; stopping without it");
          } else connectionsClosed += closed;
        }
        for (const hook of this.#parts.shutdown) {
          try {
            await hook();
          } catch (error) {
            logger.error(errorFields(error), "shutdown hook failed");
          }
        }
        const report = stopReportOf(stops, connectionsClosed, Date.now() - started, closeTimedOut);
        logger.info({ ...report }, "app stopped");
        return report;
      })();
      return stopping;
    };
    const publish = async (route: string, payload: unknown): Promise<void> => {
      const parts = opened.find((p) => p.routes.route(route) !== undefined) ?? opened[0];
      if (parts === undefined) throw noRouteInApp(route);
      await parts.publisher.publish(route, payload, undefined);
    };
    const running: RunningApp = Object.freeze({ stop, publish, subscriptions: Object.freeze([...subscriptions]) });
    runningBrokers.set(running, [...opened]);
    return running;
  }

  #with<R2 extends Record<string, AnyInboxSpec> = R>(parts: AppParts): App<R2> {
    return new App<R2>(this.info, { ...this.#parts, ...parts });
  }
}
