import { SqlInboxError, type AnyInboxSpec, type ClaimForm, type InboxDescription } from "@sqlinbox/core/internal";
import { dialectFor, type Engine } from "@sqlinbox/kysely-dialects";
import { Activity } from "./activity.js";
import { brokerState, type BrokerState, type SqlBroker } from "./broker.js";
import { claimStrategyFor } from "./claim/strategy-for.js";
import type { ClaimStrategy, ClaimSetup } from "./claim/claim-strategy.js";
import { systemClock, type Clock } from "./clock.js";
import { runningBrokers, startWith, type StartOverrides } from "./internal.js";
import { childLogger, consoleLogger, errorFields, type Logger } from "./logger.js";
import type { Subscriber } from "./subscriber.js";
import { Subscription } from "./subscription.js";

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

/** A started app. */
export interface RunningApp {
  /** Graceful stop: stop claiming and extending, let deliveries in work finish within the grace period, close. */
  stop(): Promise<void>;
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
        void running.stop().then(resolve, resolve);
        void signal;
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    });
  }

  /** @internal */
  async [startWith](overrides: StartOverrides): Promise<RunningApp> {
    const clock = overrides.clock ?? this.info.clock ?? systemClock;
    const logger = childLogger(overrides.logger ?? this.info.logger ?? consoleLogger(), { app: this.info.name });
    const activity = overrides.activity ?? new Activity();
    logger.info({ version: this.info.version }, "app starting");
    for (const hook of this.#startup) await hook();

    const opened: BrokerState[] = [];
    const subscriptions: Subscription[] = [];
    const unsubscribe: Array<() => void> = [];
    const held: Array<() => void> = [];
    try {
      const names = new Set<string>();
      for (const { broker, scope } of this.#brokers) {
        const state = brokerState(broker);
        for (const sub of scope.subscribers) {
          const spec = state.routes.get(sub.name);
          if (spec === undefined) {
            const known = [...state.routes.keys()].map((n) => `"${n}"`).join(", ") || "none";
            throw new SqlInboxError("NoRoute", `no route named "${sub.name}" (declared: ${known}): declare it with broker.route(spec, "${sub.name}")`, { subscription: sub.name, table: sub.queue.spec.description.table });
          }
          if (spec.description.table !== sub.queue.spec.description.table) {
            throw new SqlInboxError("Declaration", `route "${sub.name}" is on table "${spec.description.table}", the subscriber's queue on "${sub.queue.spec.description.table}"`, { subscription: sub.name });
          }
          if (names.has(sub.name)) throw new SqlInboxError("AlreadySubscribed", "a route has one subscriber per app", { subscription: sub.name });
          names.add(sub.name);
          refuseUnsupportedForm(state.source.engine, sub.name, spec.description);
          claimQueue(state, sub, held);
        }
        if (broker.listening && state.source.engine !== "postgres") {
          throw new SqlInboxError("UnsupportedForm", `listenNotify() needs Postgres (LISTEN/NOTIFY), and this broker is on ${state.source.engine} (${state.source.label}): drop .listenNotify(); other processes see a publish at their next poll`);
        }
        const database = await state.open(logger, activity);
        opened.push(state);
        if (broker.listening && !state.canListen) {
          throw new SqlInboxError("Declaration", `listenNotify() needs a Postgres broker built with SqlBroker.fromUrl, whose pool it takes a connection from; this broker is ${state.source.label}`);
        }
        const strategies: Array<{ sub: Subscriber; strategy: ClaimStrategy; leaseMs: number }> = [];
        for (const sub of scope.subscribers) {
          const spec = sub.queue.spec.description;
          const table = await state.table(spec);
          const leaseMs = sub.queue.options.lease ?? broker.leaseMs;
          const subLogger = childLogger(logger, { subscription: sub.name, table: spec.table });
          const setup: ClaimSetup = {
            database, spec, subscription: sub.name, leaseMs, precision: table.precision, clock, logger: subLogger,
            databaseLabel: state.source.label, isClosed: () => state.closed,
          };
          strategies.push({ sub, strategy: claimStrategyFor(setup), leaseMs });
        }
        checkPool(state, strategies.map(({ sub, strategy }) => ({ name: sub.name, form: strategy.form, workers: sub.queue.options.workers, perDelivery: strategy.connectionsPerDelivery })), broker.listening);
        for (const { sub, strategy, leaseMs } of strategies) {
          const subscription = new Subscription({
            subscriber: sub, spec: sub.queue.spec.description, options: sub.queue.options, strategy, clock,
            logger: childLogger(logger, { subscription: sub.name, table: sub.queue.spec.description.table }),
            outputs: { publish: (route, payload) => state.publish(route, payload, undefined) },
            activity, decodeRetryMs: leaseMs, observer: overrides.observer,
          });
          unsubscribe.push(state.onPublish(subscription.table, () => subscription.wake()));
          subscriptions.push(subscription);
        }
        if (broker.listening) await state.startListening(logger);
      }
    } catch (error) {
      for (const free of held) free();
      for (const state of opened) await state.close();
      logger.error(errorFields(error), "app failed to start");
      throw error;
    }
    for (const s of subscriptions) s.start();
    logger.info({ subscriptions: subscriptions.map((s) => s.name).join(",") }, "app started");

    const grace = this.info.shutdownGrace ?? 10_000;
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> => {
      stopping ??= (async () => {
        logger.info({}, "app stopping: no more claims or extensions");
        await Promise.all(subscriptions.map((s) => s.stopClaiming()));
        await Promise.all(subscriptions.map((s) => s.drain(grace)));
        for (const off of unsubscribe) off();
        for (const free of held) free();
        for (const state of opened) await state.close();
        for (const hook of this.#shutdown) {
          try {
            await hook();
          } catch (error) {
            logger.error(errorFields(error), "shutdown hook failed");
          }
        }
        logger.info({}, "app stopped");
      })();
      return stopping;
    };
    const publish = async (route: string, payload: unknown): Promise<void> => {
      const state = opened.find((s) => s.routes.has(route)) ?? opened[0];
      if (state === undefined) throw new SqlInboxError("NoRoute", `no broker of this app declares route "${route}"`, { subscription: route });
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

/** The queues (table and route) subscribed on each broker by running apps: a second subscriber is `AlreadySubscribed`. */
const subscribedQueues = new WeakMap<BrokerState, Set<string>>();

function claimQueue(state: BrokerState, sub: Subscriber, held: Array<() => void>): void {
  const queues = subscribedQueues.get(state) ?? new Set<string>();
  subscribedQueues.set(state, queues);
  const queue = `${sub.queue.spec.description.table}\u0000${sub.name}`;
  if (queues.has(queue)) {
    throw new SqlInboxError("AlreadySubscribed", "this queue already has a subscriber on this broker (in this or another running app): one subscriber per queue, raise its workers instead", { subscription: sub.name, table: sub.queue.spec.description.table });
  }
  queues.add(queue);
  held.push(() => queues.delete(queue));
}

/** A row-lock table on an engine without row locks (SQLite) is refused before anything connects. */
function refuseUnsupportedForm(engine: Engine, subscription: string, spec: InboxDescription): void {
  if (spec.form === "rowLock" && !dialectFor(engine).capabilities.rowLock) {
    throw new SqlInboxError(
      "UnsupportedForm",
      `a row-lock table on ${engine}, which has no row locks: give the table a lease column (.lease(column("locked_until"))) or an advisory key (.advisoryLock("…"))`,
      { subscription, table: spec.table },
    );
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
  const parts = needs.map((n) => ({ ...n, total: n.workers * n.perDelivery + 1 }));
  const total = parts.reduce((sum, p) => sum + p.total, 0) + (listenNotify ? 1 : 0);
  if (total <= state.poolMax) return;
  const arithmetic = [
    ...parts.map((p) => `"${p.name}" (${p.form}, workers(${p.workers})): ${p.workers} x ${p.perDelivery} for deliveries in work + 1 for handlers, publishes and settlements = ${p.total}`),
    ...(listenNotify ? ["1 for listenNotify"] : []),
  ].join("; ");
  throw new SqlInboxError(
    "PoolTooSmall",
    `the pool holds at most ${state.poolMax} connections, the subscriptions${listenNotify ? " and listenNotify" : ""} need ${total}: ${arithmetic}; total ${total} > pool max ${state.poolMax}: raise pool.max to ${total} or lower workers`,
  );
}
