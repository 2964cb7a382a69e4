import type { AnyInboxSpec, ClaimForm, InboxDescription } from "@sqlinbox/core/internal";
import { dialectFor, type Engine } from "@sqlinbox/kysely-dialects";
import { Activity } from "./activity.js";
import type { BrokerParts } from "./publish/broker.js";
import type { BrokerConnection, PoolerMode } from "./publish/connection.js";
import type { RouteTable } from "./publish/route-table.js";
import type { Published } from "./publish/publisher.js";
import type { Database } from "./drivers/database.js";
import {
  listenNeedsOwnPool,
  formOnMultiPrimaryCluster,
  formThroughTransactionPooler,
  listenNeedsPostgres,
  listenThroughTransactionPooler,
  noRoute,
  noRouteInApp,
  poolTooSmall,
  queueSubscribedTwice,
  routeOnOtherTable,
  routeSubscribedTwice,
  rowLockTableUnsupported,
  clockSkew,
} from "./errors.js";
import { brokerParts, type SqlBroker } from "./publish/sql-broker.js";
import { flowControlledStrategy } from "./claim/flow/flow-for.js";
import { exclusiveByLock, formUnsupported, holdsSessionAcrossTransactions } from "./claim/form-facts.js";
import { ParkedRows } from "./consume/parked-rows.js";
import type { DeadLetterDeclaration, DeadLetterTarget } from "./declare/queue.js";
import type { ClaimStrategy, ClaimSetup } from "./claim/claim-strategy.js";
import { systemClock, type Clock } from "./clock.js";
import { runningBrokers, startWith, type StartOverrides } from "./internal.js";
import { calmLogger } from "./calm-logger.js";
import { childLogger, consoleLogger, errorFields, type Logger } from "./logger.js";
import { stopReportOf, within, type StopReport } from "./stop-report.js";
import type { Subscriber } from "./declare/subscriber.js";
import { Subscription, type DeliveryObserver } from "./consume/subscription.js";
import { ControlWatch } from "./control/control-watch.js";
import { dbSystemOf } from "./telemetry/db-system.js";
import { loadTelemetry } from "./telemetry/load-telemetry.js";
import { observedDatabase, observedSubscription, subscriptionPlace } from "./telemetry/observed-app.js";
import type { ObservedDatabase, ObservedSubscription, Telemetry } from "./telemetry/telemetry.js";
import { declareCron, type CronDeclaration, type CronOptionsFor, type CronPayloadFor, type CronRouteAllowed } from "./schedule/cron.js";
import { CronRunner } from "./schedule/cron-runner.js";
import { DatabaseClock, type LeaseClock } from "./time/database-clock.js";
import { tolerableSkewMs } from "./time/clock-offset.js";

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
  /** OpenTelemetry spans and metrics when `@opentelemetry/api` is installed (default); `false`: the API is never loaded. */
  readonly telemetry?: boolean;
}

/** The subscribers an app runs on one broker: `(b) => b.include(render).include(notify)`. */
export class BrokerScope {
  readonly subscribers: readonly Subscriber[];
  private constructor(subscribers: readonly Subscriber[]) {
    this.subscribers = Object.freeze([...subscribers]);
    Object.freeze(this);
  }
  /** @internal */
  static empty(): BrokerScope {
    return new BrokerScope([]);
  }
  include<S extends AnyInboxSpec>(sub: Subscriber<S>): BrokerScope {
    return new BrokerScope([...this.subscribers, sub as unknown as Subscriber]);
  }
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

type Hook = () => unknown;
interface BrokerUse {
  readonly broker: SqlBroker<Record<string, AnyInboxSpec>>;
  readonly scope: BrokerScope;
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
  readonly #startup: readonly Hook[];
  readonly #shutdown: readonly Hook[];
  readonly #brokers: readonly BrokerUse[];
  readonly #crons: readonly CronDeclaration[];

  constructor(info: AppInfo, parts: AppParts = {}) {
    this.info = Object.freeze({ ...info });
    this.#startup = parts.startup ?? [];
    this.#shutdown = parts.shutdown ?? [];
    this.#brokers = parts.brokers ?? [];
    this.#crons = parts.crons ?? [];
    Object.freeze(this);
  }

  /** Runs before any broker connects (create tables here). */
  onStartup(hook: Hook): App<R> {
    return this.#with({ startup: [...this.#startup, hook] });
  }

  /** Runs after the brokers closed. */
  onShutdown(hook: Hook): App<R> {
    return this.#with({ shutdown: [...this.#shutdown, hook] });
  }

  /** Runs the subscribers `configure` includes on `broker` (after `broker.route(…)`); the app's type learns the broker's routes. */
  withBroker<R2 extends Record<string, AnyInboxSpec>, E extends Engine>(broker: SqlBroker<R2, E>, configure: (b: BrokerScope) => BrokerScope): App<R & R2> {
    const use: BrokerUse = { broker: broker as unknown as BrokerUse["broker"], scope: configure(BrokerScope.empty()) };
    return this.#with({ brokers: [...this.#brokers, use] });
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
      for (const { broker } of this.#brokers) {
        const spec = brokerParts(broker).routes.route(name);
        if (spec !== undefined) return { spec, broker };
      }
      return undefined;
    });
    return this.#with({ crons: [...this.#crons, declared] });
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
    const run: Startup = {
      clock: overrides.clock ?? this.info.clock ?? systemClock,
      // A paused clock (TestApp.start) is the only time there is: nothing is measured against it.
      leaseClock: overrides.pausedClock === true ? undefined : (this.info.leaseClock ?? "database"),
      brokerClocks: new Map(),
      logger,
      activity: overrides.activity ?? new Activity(),
      observer: overrides.observer,
      opened: [],
      subscriptions: [],
      unsubscribe: [],
      held: [],
      telemetry: await loadTelemetry({ enabled: this.info.telemetry !== false }),
      observed: { subscriptions: [], databases: [] },
    };
    logger.info({ version: this.info.version }, "app starting");
    for (const hook of this.#startup) await hook();
    try {
      const names = new Set<string>();
      for (const use of this.#brokers) await startBroker(run, use, names);
    } catch (error) {
      for (const free of run.held) free();
      for (const parts of run.opened) await parts.connection.close();
      logger.error(errorFields(error), "app failed to start");
      throw error;
    }
    const unobserve = run.telemetry.observe(run.observed);
    run.unsubscribe.push(unobserve);
    for (const s of run.subscriptions) s.start();
    // A schedule fires on the database's time of the broker that routes it, as its claims do.
    const crons = this.#crons.map((cron) => new CronRunner(cron, run.brokerClocks.get(cron.broker) ?? run.clock, logger, publishTick));
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
        // No more ticks; a tick's publish in flight ends before the pools close.
        await within(Promise.all(crons.map((c) => c.stop())), left());
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
        for (const hook of this.#shutdown) {
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
    const connections = opened.map((parts) => parts.connection);
    runningBrokers.set(running, connections);
    return running;
  }

  #with<R2 extends Record<string, AnyInboxSpec> = R>(parts: AppParts): App<R2> {
    return new App<R2>(this.info, { startup: this.#startup, shutdown: this.#shutdown, brokers: this.#brokers, crons: this.#crons, ...parts });
  }
}

/** What an app is made of (every method of `App` returns a new one with one part more). */
interface AppParts {
  readonly startup?: readonly Hook[];
  readonly shutdown?: readonly Hook[];
  readonly brokers?: readonly BrokerUse[];
  readonly crons?: readonly CronDeclaration[];
}

/** A tick goes through the publisher of the broker that routes it, with its key (the app's telemetry records it like any publish). */
function publishTick(cron: CronDeclaration, payload: unknown, key: string): Promise<Published> {
  return brokerParts(cron.broker).publisher.publish(cron.route, payload, undefined, { keys: [key] });
}

/** What startup builds up, and takes down again if a step fails. */
interface Startup {
  /** The app's clock: each broker's subscriptions read the database's time through it. */
  readonly clock: Clock;
  /** `undefined` on a paused clock: the app's clock is used as it is, unmeasured. */
  readonly leaseClock: LeaseClock | undefined;
  /** Each started broker's time (the database's, or the app's clock when paused). */
  readonly brokerClocks: Map<object, Clock>;
  readonly logger: Logger;
  readonly activity: Activity;
  readonly observer: DeliveryObserver | undefined;
  /** Brokers whose pool is open: closed on a failed start and at stop. */
  readonly opened: BrokerParts[];
  readonly subscriptions: Subscription[];
  readonly unsubscribe: Array<() => void>;
  /** Queue claims this app holds on its brokers: freed on a failed start and at stop. */
  readonly held: Array<() => void>;
  readonly telemetry: Telemetry;
  /** What the observable instruments read, filled as brokers start. */
  readonly observed: { readonly subscriptions: ObservedSubscription[]; readonly databases: ObservedDatabase[] };
}

interface PlannedSubscription {
  readonly sub: Subscriber;
  readonly strategy: ClaimStrategy;
  readonly leaseMs: number;
  /** The subscription's logger, shared by its claims and its deliveries: a failure that repeats is written once, then summarised. */
  readonly logger: Logger;
}

/** One broker's startup, in order: what can be refused before connecting is refused first. */
async function startBroker(run: Startup, { broker, scope }: BrokerUse, names: Set<string>): Promise<void> {
  const parts = brokerParts(broker);
  const { connection } = parts;
  checkRoutes(run, parts, scope, names);
  if (broker.listening && !dialectFor(connection.source.engine).capabilities.listenNotify) throw listenNeedsPostgres(connection.source.engine, connection.source.label);
  if (broker.listening && connection.source.pooler === "transaction") throw listenThroughTransactionPooler(connection.source.label);
  if (connection.source.pooler !== undefined) run.logger.info({ database: connection.source.label, pooler: connection.source.pooler }, poolerDecision(connection.source.pooler));
  run.held.push(parts.runByApp());
  const database = await parts.open(run.logger, run.activity);
  run.opened.push(parts);
  refuseOnCluster(run, connection, scope);
  if (broker.listening && !connection.canListen) throw listenNeedsOwnPool(connection.source.label);
  const clock = await clockOf(run, connection, database);
  run.brokerClocks.set(broker, clock);
  const planned = await checkSchemas(run, parts, database, clock, broker.leaseMs, scope);
  if (clock instanceof DatabaseClock) refuseSkew(clock, connection, planned, broker.leaseMs);
  checkPoolBudget(connection, planned, broker.listening);
  const dbSystem = dbSystemOf(connection.source.engine, connection.serverLabel);
  run.unsubscribe.push(parts.bindPublisher(run.telemetry.publisher({ dbSystem }), clock));
  if (run.telemetry.enabled) run.observed.databases.push(observedDatabase(database, dbSystem));
  const watch = controlWatchOf(run, parts, database, planned);
  startSubscriptions(run, parts, database, clock, dbSystem, planned, watch);
  // Before the first claim: a route paused before this app started claims nothing.
  await watch?.start();
  if (broker.listening) await parts.listen(run.logger);
}

/** The time this broker's claims, leases and publishes read: the database's, measured through the app's clock (unless paused). */
async function clockOf(run: Startup, connection: BrokerConnection, database: Database): Promise<Clock> {
  if (run.leaseClock === undefined) return run.clock;
  const place = { database: connection.source.label, server: connection.serverLabel };
  return DatabaseClock.start({ base: run.clock, database, logger: run.logger, place, leaseClock: run.leaseClock, isClosed: () => connection.closed });
}

/** With `leaseClock: "host"`, a host clock further from the database's than a quarter of the shortest lease refuses the start. */
function refuseSkew(clock: DatabaseClock, connection: BrokerConnection, planned: readonly PlannedSubscription[], brokerLeaseMs: number): void {
  if (clock.corrects) return;
  const shortest = planned.reduce<PlannedSubscription | undefined>((min, p) => (min === undefined || p.leaseMs < min.leaseMs ? p : min), undefined);
  const leaseMs = shortest?.leaseMs ?? brokerLeaseMs;
  const { offsetMs, hostAt, serverAt } = clock.offset;
  if (Math.abs(offsetMs) <= tolerableSkewMs(leaseMs)) return;
  const place = shortest === undefined ? {} : { subscription: shortest.sub.name, table: shortest.sub.queue.spec.description.table };
  throw clockSkew({ hostAt, serverAt, skewMs: -offsetMs }, leaseMs, `${connection.serverLabel} at ${connection.source.label}`, place);
}

/** Every subscriber has a declared route on its own table, one subscriber per route and queue, on a form the engine has. */
function checkRoutes(run: Startup, parts: BrokerParts, scope: BrokerScope, names: Set<string>): void {
  for (const sub of scope.subscribers) {
    const queueTable = sub.queue.spec.description.table;
    const spec = parts.routes.route(sub.name);
    if (spec === undefined) throw noRoute(sub.name, parts.routes.all, queueTable);
    if (spec.description.table !== queueTable) throw routeOnOtherTable(sub.name, spec.description.table, queueTable);
    if (names.has(sub.name)) throw routeSubscribedTwice(sub.name);
    names.add(sub.name);
    refuseUnsupportedForm(parts.connection.source.engine, sub.name, spec.description);
    if (parts.connection.source.pooler === "transaction" && holdsSessionAcrossTransactions(spec.description.form))
      throw formThroughTransactionPooler(spec.description.form, { subscription: sub.name, table: spec.description.table });
    claimQueue(parts, sub, run.held);
  }
}

/** Checks each subscribed table against the database (once per table) and builds its claim strategy. */
async function checkSchemas(
  run: Startup,
  { connection, routes }: BrokerParts,
  database: Database,
  clock: Clock,
  brokerLeaseMs: number,
  scope: BrokerScope,
): Promise<PlannedSubscription[]> {
  const planned: PlannedSubscription[] = [];
  for (const sub of scope.subscribers) {
    const spec = sub.queue.spec.description;
    const table = await routes.table(spec);
    const leaseMs = sub.queue.options.lease ?? brokerLeaseMs;
    const subLogger = calmLogger(childLogger(run.logger, { subscription: sub.name, table: spec.table }), clock);
    run.unsubscribe.push(() => subLogger.close());
    const setup: ClaimSetup = {
      database,
      spec,
      subscription: sub.name,
      leaseMs,
      precision: table.precision,
      clock,
      logger: subLogger,
      databaseLabel: connection.source.label,
      isClosed: () => connection.closed,
      transactional: sub.queue.options.transactional === true,
      // A batch handler's rows share their claim's transaction in the row-lock form.
      sharedTransaction: sub.queue.options.sharedTransaction === true || sub.kind === "batch",
      deadLetter: await deadLetterChecked(routes, sub.queue.options.deadLetter),
      parked: new ParkedRows(clock),
      perKey: sub.queue.options.maxInWorkPerKey,
    };
    planned.push({ sub, strategy: await flowControlledStrategy(setup, sub.queue.options), leaseMs, logger: subLogger });
  }
  return planned;
}

/** A dead-letter table is checked against the database like a routed one: a missing column fails the start. */
async function deadLetterChecked(routes: RouteTable, declaration: DeadLetterDeclaration | undefined): Promise<DeadLetterTarget | undefined> {
  const target = declaration?.target;
  if (target !== undefined && "table" in target) await routes.table(target.table);
  return target;
}

function checkPoolBudget(state: BrokerConnection, planned: readonly PlannedSubscription[], listenNotify: boolean): void {
  checkPool(
    state,
    planned.map(({ sub, strategy }) => ({
      name: sub.name,
      form: strategy.profile.form,
      workers: deliveriesInWork(sub, strategy),
      perDelivery: strategy.profile.connectionsPerDelivery,
    })),
    listenNotify,
  );
}

/** Deliveries in work at most: a batch handler holds a whole batch per worker, in one hold where the form shares one (row lock). */
function deliveriesInWork(sub: Subscriber, strategy: ClaimStrategy): number {
  const { workers, batch } = sub.queue.options;
  return sub.kind === "batch" && !strategy.profile.batchSharesHold ? workers * batch : workers;
}

/** Builds the subscriptions (they claim once the whole app started) and wires publishes to wake them. */
function startSubscriptions(
  run: Startup,
  parts: BrokerParts,
  database: Database,
  clock: Clock,
  dbSystem: string,
  planned: readonly PlannedSubscription[],
  watch: ControlWatch | undefined,
): void {
  const built: Subscription[] = [];
  for (const { sub, strategy, leaseMs, logger } of planned) {
    const spec = sub.queue.spec.description;
    const place = subscriptionPlace(sub.name, spec, strategy.profile.form, dbSystem);
    const subscription = new Subscription({
      subscriber: sub,
      spec,
      options: sub.queue.options,
      strategy,
      clock,
      logger,
      outputs: { publish: async (route, payload) => void (await parts.publisher.publish(route, payload, undefined)) },
      activity: run.activity,
      decodeRetryMs: leaseMs,
      observer: run.observer,
      telemetry: run.telemetry.subscription(place),
      control: watch?.checkFor(sub.name, spec.table),
    });
    if (run.telemetry.enabled) run.observed.subscriptions.push(observedSubscription(place, subscription, strategy, database, spec));
    run.unsubscribe.push(parts.publisher.onPublish(subscription.table, (dueAt) => (dueAt === undefined ? subscription.wake() : subscription.wakeAt(dueAt))));
    run.subscriptions.push(subscription);
    built.push(subscription);
  }
  watch?.attach(built);
}

/**
 * The control table's watch for one broker's subscriptions in this app, reading once per the
 * shortest poll interval among them; a pause or cancel notification (listenNotify) reads at once.
 */
function controlWatchOf(run: Startup, parts: BrokerParts, database: Database, planned: readonly PlannedSubscription[]): ControlWatch | undefined {
  if (planned.length === 0) return undefined;
  const watch = new ControlWatch({
    database,
    clock: run.clock,
    logger: run.logger,
    intervalMs: Math.min(...planned.map((p) => p.sub.queue.options.pollInterval)),
    tableOf: (route) => parts.routes.route(route)?.description.table,
  });
  run.unsubscribe.push(() => watch.stop());
  run.unsubscribe.push(parts.publisher.onPublish(database.dialect.control.table, () => watch.refresh()));
  return watch;
}

/** The queues (table and route) subscribed on each broker by running apps: a second subscriber is `AlreadySubscribed`. */
const subscribedQueues = new WeakMap<BrokerParts, Set<string>>();

function claimQueue(parts: BrokerParts, sub: Subscriber, held: Array<() => void>): void {
  const queues = subscribedQueues.get(parts) ?? new Set<string>();
  subscribedQueues.set(parts, queues);
  const queue = `${sub.queue.spec.description.table}\u0000${sub.name}`;
  if (queues.has(queue)) {
    throw queueSubscribedTwice({ subscription: sub.name, table: sub.queue.spec.description.table });
  }
  queues.add(queue);
  held.push(() => queues.delete(queue));
}

/** On a multi-primary cluster (read at open) only the forms whose exclusivity is a committed write run; the log says so. */
function refuseOnCluster(run: Startup, connection: BrokerConnection, scope: BrokerScope): void {
  const cluster = connection.cluster;
  if (cluster === undefined) return;
  run.logger.info(
    { database: connection.source.label, cluster: cluster.kind, nodes: cluster.nodes },
    `a node of a ${cluster.kind} cluster (wsrep_on, ${cluster.nodes} nodes): lease tables run; row-lock and advisory tables are refused (their locks are the node's own)`,
  );
  for (const sub of scope.subscribers) {
    const spec = sub.queue.spec.description;
    if (exclusiveByLock(spec.form)) throw formOnMultiPrimaryCluster(spec.form, cluster, { subscription: sub.name, table: spec.table });
  }
}

/** What a declared pooler means for this app, said once in the startup log. */
function poolerDecision(pooler: PoolerMode): string {
  return pooler === "transaction"
    ? "through a pooler in transaction mode: lease and row-lock tables run; advisory tables and listenNotify() are refused (they keep a session across transactions)"
    : "through a pooler in session mode: every form runs as on a direct connection";
}

/** A row-lock table on an engine without row locks (SQLite) is refused before anything connects. */
function refuseUnsupportedForm(engine: Engine, subscription: string, spec: InboxDescription): void {
  if (formUnsupported(spec.form, dialectFor(engine).capabilities)) {
    throw rowLockTableUnsupported(engine, { subscription, table: spec.table });
  }
}

/** Connections one subscription holds at most: one per delivery in work, plus one for handlers, publishes and settlements. */
export interface PoolNeed {
  readonly name: string;
  readonly form: ClaimForm;
  readonly workers: number;
  readonly perDelivery: number;
}

/** Refuses to start when the pool cannot hold what the subscriptions need, showing the arithmetic. */
export function checkPool(state: Pick<BrokerConnection, "poolMax" | "source">, needs: readonly PoolNeed[], listenNotify = false): void {
  if (!Number.isFinite(state.poolMax) || dialectFor(state.source.engine).capabilities.singleWriter) return;
  const shares = needs.map((n) => ({ ...n, total: n.workers * n.perDelivery + 1 }));
  const total = shares.reduce((sum, p) => sum + p.total, 0) + (listenNotify ? 1 : 0);
  if (total <= state.poolMax) return;
  throw poolTooSmall(state.poolMax, shares, listenNotify, total);
}
