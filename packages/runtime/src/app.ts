import type { AnyInboxSpec, ClaimForm, InboxDescription } from "@sqlinbox/core/internal";
import { dialectFor, type Engine } from "@sqlinbox/kysely-dialects";
import { Activity } from "./activity.js";
import type { BrokerState, PoolerMode } from "./broker.js";
import type { Database } from "./database.js";
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
} from "./errors.js";
import { brokerState, type SqlBroker } from "./sql-broker.js";
import { claimStrategyFor, exclusiveByLock, holdsSessionAcrossTransactions } from "./claim/strategy-for.js";
import { ParkedRows } from "./parked-rows.js";
import type { DeadLetterDeclaration, DeadLetterTarget } from "./queue.js";
import type { ClaimStrategy, ClaimSetup } from "./claim/claim-strategy.js";
import { systemClock, type Clock } from "./clock.js";
import { runningBrokers, startWith, type StartOverrides } from "./internal.js";
import { childLogger, consoleLogger, errorFields, type Logger } from "./logger.js";
import { stopReportOf, within, type StopReport } from "./stop-report.js";
import type { Subscriber } from "./subscriber.js";
import { Subscription, type DeliveryObserver } from "./subscription.js";
import { dbSystemOf } from "./telemetry/db-system.js";
import { loadTelemetry } from "./telemetry/load-telemetry.js";
import { observedDatabase, observedSubscription, subscriptionPlace } from "./telemetry/observed-app.js";
import type { ObservedDatabase, ObservedSubscription, Telemetry } from "./telemetry/telemetry.js";

/** What an app is and how it runs. */
export interface AppInfo {
  readonly name: string;
  readonly version: string;
  /** Where events go (pino fits); default: a concise console logger. */
  readonly logger?: Logger;
  /** The clock all timing goes through; default: the system clock. */
  readonly clock?: Clock;
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
export class App {
  readonly info: AppInfo;
  readonly #startup: readonly Hook[];
  readonly #shutdown: readonly Hook[];
  readonly #brokers: readonly BrokerUse[];

  constructor(info: AppInfo, parts: { startup?: readonly Hook[]; shutdown?: readonly Hook[]; brokers?: readonly BrokerUse[] } = {}) {
    this.info = Object.freeze({ ...info });
    this.#startup = parts.startup ?? [];
    this.#shutdown = parts.shutdown ?? [];
    this.#brokers = parts.brokers ?? [];
    Object.freeze(this);
  }

  /** Runs before any broker connects (create tables here). */
  onStartup(hook: Hook): App {
    return this.#with({ startup: [...this.#startup, hook] });
  }

  /** Runs after the brokers closed. */
  onShutdown(hook: Hook): App {
    return this.#with({ shutdown: [...this.#shutdown, hook] });
  }

  /** Runs the subscribers `configure` includes on `broker` (after `broker.route(…)`). */
  withBroker<R extends Record<string, AnyInboxSpec>, E extends Engine>(broker: SqlBroker<R, E>, configure: (b: BrokerScope) => BrokerScope): App {
    const use: BrokerUse = { broker: broker as unknown as BrokerUse["broker"], scope: configure(BrokerScope.empty()) };
    return this.#with({ brokers: [...this.#brokers, use] });
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
      for (const state of run.opened) await state.close();
      logger.error(errorFields(error), "app failed to start");
      throw error;
    }
    const unobserve = run.telemetry.observe(run.observed);
    run.unsubscribe.push(unobserve);
    for (const s of run.subscriptions) s.start();
    logger.info({ subscriptions: run.subscriptions.map((s) => s.name).join(",") }, "app started");
    return this.#running(run);
  }

  /** The handle of a started app: its stop (claims, then grace, then connections, then hooks) and its publish. */
  #running(run: Startup): RunningApp {
    const { logger, opened, subscriptions } = run;
    const grace = this.info.shutdownGrace ?? 10_000;
    let stopping: Promise<StopReport> | undefined;
    const stop = (): Promise<StopReport> => {
      stopping ??= (async () => {
        logger.info({}, "app stopping: no more claims or extensions");
        const started = Date.now();
        const left = (): number => Math.max(0, grace - (Date.now() - started));
        // Every step that waits on the database waits at most what is left of the grace (and
        // the pools' close a moment more): a database down or restarting never holds the stop.
        const claims = await Promise.all(subscriptions.map((s) => s.stopClaiming(left())));
        const stops = await Promise.all(subscriptions.map((s, i) => s.drain(left(), claims[i]?.unstarted ?? 0, claims[i]?.timedOut ?? false)));
        for (const off of run.unsubscribe) off();
        for (const free of run.held) free();
        let connectionsClosed = 0;
        let closeTimedOut = false;
        for (const state of opened) {
          const closed = await within(state.close(), left() + CLOSE_MARGIN_MS);
          if (closed === undefined) {
            closeTimedOut = true;
            logger.warn({ database: state.source.label }, "the pool did not close within the grace; stopping without it");
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
      const state = opened.find((s) => s.route(route) !== undefined) ?? opened[0];
      if (state === undefined) throw noRouteInApp(route);
      await state.publish(route, payload, undefined);
    };
    const running: RunningApp = Object.freeze({ stop, publish, subscriptions: Object.freeze([...subscriptions]) });
    runningBrokers.set(running, opened);
    return running;
  }

  #with(parts: { startup?: readonly Hook[]; shutdown?: readonly Hook[]; brokers?: readonly BrokerUse[] }): App {
    return new App(this.info, { startup: this.#startup, shutdown: this.#shutdown, brokers: this.#brokers, ...parts });
  }
}

/** What startup builds up, and takes down again if a step fails. */
interface Startup {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly activity: Activity;
  readonly observer: DeliveryObserver | undefined;
  /** Brokers whose pool is open: closed on a failed start and at stop. */
  readonly opened: BrokerState[];
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
}

/** One broker's startup, in order: what can be refused before connecting is refused first. */
async function startBroker(run: Startup, { broker, scope }: BrokerUse, names: Set<string>): Promise<void> {
  const state = brokerState(broker);
  checkRoutes(run, state, scope, names);
  if (broker.listening && state.source.engine !== "postgres") throw listenNeedsPostgres(state.source.engine, state.source.label);
  if (broker.listening && state.source.pooler === "transaction") throw listenThroughTransactionPooler(state.source.label);
  if (state.source.pooler !== undefined) run.logger.info({ database: state.source.label, pooler: state.source.pooler }, poolerDecision(state.source.pooler));
  const database = await state.open(run.logger, run.activity);
  run.opened.push(state);
  refuseOnCluster(run, state, scope);
  if (broker.listening && !state.canListen) throw listenNeedsOwnPool(state.source.label);
  const planned = await checkSchemas(run, state, database, broker.leaseMs, scope);
  checkPoolBudget(state, planned, broker.listening);
  const dbSystem = dbSystemOf(state.source.engine, state.serverLabel);
  state.publishTelemetry = run.telemetry.publisher({ dbSystem });
  run.unsubscribe.push(() => {
    state.publishTelemetry = undefined;
  });
  if (run.telemetry.enabled) run.observed.databases.push(observedDatabase(database, dbSystem));
  startSubscriptions(run, state, database, dbSystem, planned);
  if (broker.listening) await state.startListening(run.logger);
}

/** Every subscriber has a declared route on its own table, one subscriber per route and queue, on a form the engine has. */
function checkRoutes(run: Startup, state: BrokerState, scope: BrokerScope, names: Set<string>): void {
  for (const sub of scope.subscribers) {
    const queueTable = sub.queue.spec.description.table;
    const spec = state.route(sub.name);
    if (spec === undefined) throw noRoute(sub.name, state.routes, queueTable);
    if (spec.description.table !== queueTable) throw routeOnOtherTable(sub.name, spec.description.table, queueTable);
    if (names.has(sub.name)) throw routeSubscribedTwice(sub.name);
    names.add(sub.name);
    refuseUnsupportedForm(state.source.engine, sub.name, spec.description);
    if (state.source.pooler === "transaction" && holdsSessionAcrossTransactions(spec.description))
      throw formThroughTransactionPooler(spec.description.form, { subscription: sub.name, table: spec.description.table });
    claimQueue(state, sub, run.held);
  }
}

/** Checks each subscribed table against the database (once per table) and builds its claim strategy. */
async function checkSchemas(run: Startup, state: BrokerState, database: Database, brokerLeaseMs: number, scope: BrokerScope): Promise<PlannedSubscription[]> {
  const planned: PlannedSubscription[] = [];
  for (const sub of scope.subscribers) {
    const spec = sub.queue.spec.description;
    const table = await state.table(spec);
    const leaseMs = sub.queue.options.lease ?? brokerLeaseMs;
    const subLogger = childLogger(run.logger, { subscription: sub.name, table: spec.table });
    const setup: ClaimSetup = {
      database,
      spec,
      subscription: sub.name,
      leaseMs,
      precision: table.precision,
      clock: run.clock,
      logger: subLogger,
      databaseLabel: state.source.label,
      isClosed: () => state.closed,
      transactional: sub.queue.options.transactional === true,
      // A batch handler's rows share their claim's transaction in the row-lock form.
      sharedTransaction: sub.queue.options.sharedTransaction === true || sub.kind === "batch",
      deadLetter: await deadLetterChecked(state, sub.queue.options.deadLetter),
      parked: new ParkedRows(run.clock),
    };
    planned.push({ sub, strategy: claimStrategyFor(setup), leaseMs });
  }
  return planned;
}

/** A dead-letter table is checked against the database like a routed one: a missing column fails the start. */
async function deadLetterChecked(state: BrokerState, declaration: DeadLetterDeclaration | undefined): Promise<DeadLetterTarget | undefined> {
  const target = declaration?.target;
  if (target !== undefined && "table" in target) await state.table(target.table);
  return target;
}

function checkPoolBudget(state: BrokerState, planned: readonly PlannedSubscription[], listenNotify: boolean): void {
  checkPool(
    state,
    planned.map(({ sub, strategy }) => ({ name: sub.name, form: strategy.form, workers: deliveriesInWork(sub, strategy), perDelivery: strategy.connectionsPerDelivery })),
    listenNotify,
  );
}

/** Deliveries in work at most: a batch handler holds a whole batch per worker, in one transaction in the row-lock form. */
function deliveriesInWork(sub: Subscriber, strategy: ClaimStrategy): number {
  const { workers, batch } = sub.queue.options;
  return sub.kind === "batch" && strategy.form !== "rowLock" ? workers * batch : workers;
}

/** Builds the subscriptions (they claim once the whole app started) and wires publishes to wake them. */
function startSubscriptions(run: Startup, state: BrokerState, database: Database, dbSystem: string, planned: readonly PlannedSubscription[]): void {
  for (const { sub, strategy, leaseMs } of planned) {
    const spec = sub.queue.spec.description;
    const place = subscriptionPlace(sub.name, spec, strategy.form, dbSystem);
    const subscription = new Subscription({
      subscriber: sub,
      spec,
      options: sub.queue.options,
      strategy,
      clock: run.clock,
      logger: childLogger(run.logger, { subscription: sub.name, table: spec.table }),
      outputs: { publish: (route, payload) => state.publish(route, payload, undefined) },
      activity: run.activity,
      decodeRetryMs: leaseMs,
      observer: run.observer,
      telemetry: run.telemetry.subscription(place),
    });
    if (run.telemetry.enabled) run.observed.subscriptions.push(observedSubscription(place, subscription, strategy, database, spec));
    run.unsubscribe.push(state.onPublish(subscription.table, () => subscription.wake()));
    run.subscriptions.push(subscription);
  }
}

/** The queues (table and route) subscribed on each broker by running apps: a second subscriber is `AlreadySubscribed`. */
const subscribedQueues = new WeakMap<BrokerState, Set<string>>();

function claimQueue(state: BrokerState, sub: Subscriber, held: Array<() => void>): void {
  const queues = subscribedQueues.get(state) ?? new Set<string>();
  subscribedQueues.set(state, queues);
  const queue = `${sub.queue.spec.description.table}\u0000${sub.name}`;
  if (queues.has(queue)) {
    throw queueSubscribedTwice({ subscription: sub.name, table: sub.queue.spec.description.table });
  }
  queues.add(queue);
  held.push(() => queues.delete(queue));
}

/** On a multi-primary cluster (read at open) only the forms whose exclusivity is a committed write run; the log says so. */
function refuseOnCluster(run: Startup, state: BrokerState, scope: BrokerScope): void {
  const cluster = state.cluster;
  if (cluster === undefined) return;
  run.logger.info(
    { database: state.source.label, cluster: cluster.kind, nodes: cluster.nodes },
    `a node of a ${cluster.kind} cluster (wsrep_on, ${cluster.nodes} nodes): lease tables run; row-lock and advisory tables are refused (their locks are the node's own)`,
  );
  for (const sub of scope.subscribers) {
    const spec = sub.queue.spec.description;
    if (exclusiveByLock(spec)) throw formOnMultiPrimaryCluster(spec.form, cluster, { subscription: sub.name, table: spec.table });
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
  if (spec.form === "rowLock" && !dialectFor(engine).capabilities.rowLock) {
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
export function checkPool(state: Pick<BrokerState, "poolMax" | "source">, needs: readonly PoolNeed[], listenNotify = false): void {
  if (!Number.isFinite(state.poolMax) || state.source.engine === "sqlite") return;
  const shares = needs.map((n) => ({ ...n, total: n.workers * n.perDelivery + 1 }));
  const total = shares.reduce((sum, p) => sum + p.total, 0) + (listenNotify ? 1 : 0);
  if (total <= state.poolMax) return;
  throw poolTooSmall(state.poolMax, shares, listenNotify, total);
}
