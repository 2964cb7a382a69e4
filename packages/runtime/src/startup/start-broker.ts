/**
 * An app's start-up, one broker at a time, in order: what can be refused before connecting is
 * refused first (`refusals.ts`); then the connection, the broker's clock, the tables' schemas and
 * each subscription's claim, the pool's budget, the subscriptions themselves and the control watch.
 * What a step builds goes into `Startup`, which a failed start takes down again.
 */
import type { Activity } from "../activity.js";
import type { ClaimSetup, ClaimStrategy } from "../claim/claim-strategy.js";
import { flowControlledStrategy } from "../claim/flow/flow-for.js";
import { ParkedRows } from "../claim/parked-rows.js";
import { calmLogger } from "../calm-logger.js";
import type { Clock } from "../clock.js";
import { Subscription, type DeliveryObserver } from "../consume/subscription.js";
import { ControlWatch } from "../control/control-watch.js";
import type { DeadLetterDeclaration, DeadLetterTarget } from "../declare/queue.js";
import type { Subscriber } from "../declare/subscriber.js";
import type { Database } from "../drivers/database.js";
import { childLogger, type Logger } from "../logger.js";
import type { BrokerParts } from "../publish/broker.js";
import type { PublishObserver } from "../publish/publisher.js";
import type { RouteTable } from "../publish/route-table.js";
import { brokerParts } from "../publish/sql-broker.js";
import { dbSystemOf } from "../telemetry/db-system.js";
import { observedDatabase, observedSubscription, subscriptionPlace } from "../telemetry/observed-app.js";
import type { ObservedDatabase, ObservedSubscription, Telemetry, TelemetryHooks } from "../telemetry/telemetry.js";
import type { PublishMiddleware } from "../publish/publish-hooks.js";
import { DatabaseClock, type LeaseClock } from "../time/database-clock.js";
import type { BrokerUse } from "./broker-scope.js";
import type { Pruner } from "../schedule/pruner.js";
import { pruners, runPruners, type KeptRows } from "./retention.js";
import { withMiddleware, type MiddlewareUse } from "../hooks/middleware.js";
import { WorkflowFollowUp } from "../workflow/workflow-registry.js";
import { workflowTableMissing } from "../errors.js";
import { refuseListenAndSayPooler, refuseOnOpen, refusePoolBudget, refuseRoutes, refuseSkew } from "./refusals.js";

/** What startup builds up, and takes down again if a step fails. */
export interface Startup {
  /** The app's name: the control table records the routes it serves under it. */
  readonly appName: string;
  /** The app's clock: each broker's subscriptions read the database's time through it. */
  readonly clock: Clock;
  /** `undefined` on a paused clock: the app's clock is used as it is, unmeasured. */
  readonly leaseClock: LeaseClock | undefined;
  /** Each started broker's time (the database's, or the app's clock when paused). */
  readonly brokerClocks: Map<object, Clock>;
  readonly logger: Logger;
  readonly activity: Activity;
  readonly observer: DeliveryObserver | undefined;
  /** Told of every publish through the app's brokers (`TestApp`'s log). */
  readonly publishes: PublishObserver | undefined;
  /** The app's middleware, put around each subscriber's handler it applies to. */
  readonly middleware: readonly MiddlewareUse[];
  /** The app's publish middleware (`app.usePublish`), around each publish through its brokers. */
  readonly publishMiddleware: readonly PublishMiddleware[];
  /** OpenTelemetry's middleware, outermost of each route and of each broker's publishes; `undefined` when telemetry is off. */
  readonly telemetryHooks: TelemetryHooks | undefined;
  /** Brokers whose pool is open: closed on a failed start and at stop. */
  readonly opened: BrokerParts[];
  readonly subscriptions: Subscription[];
  readonly unsubscribe: Array<() => void>;
  /** Queue claims this app holds on its brokers: freed on a failed start and at stop. */
  readonly held: Array<() => void>;
  readonly telemetry: Telemetry;
  /** Each retention window's pruner, started with the subscriptions and stopped with the crons. */
  readonly pruners: Pruner[];
  /** What each subscribed table keeps, for the retention warnings once every broker started. */
  readonly kept: KeptRows[];
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
export async function startBroker(run: Startup, { broker, scope }: BrokerUse, names: Set<string>): Promise<void> {
  const parts = brokerParts(broker);
  const { connection } = parts;
  refuseRoutes(parts, scope, names, run.held);
  refuseListenAndSayPooler(broker.listening, connection, run.logger);
  run.held.push(parts.runByApp());
  const database = await parts.open(run.logger, run.activity);
  run.opened.push(parts);
  refuseOnOpen(connection, scope, broker.listening, run.logger);
  // The broker's one clock from now on: its claims, publishes, pauses and cancels read it.
  const clock = await parts.startClock(database, run.clock, run.leaseClock, run.logger);
  run.brokerClocks.set(broker, clock);
  const planned = await planClaims(run, parts, database, clock, broker.leaseMs, scope.subscribers);
  if (clock instanceof DatabaseClock) refuseSkew(clock, connection, planned, broker.leaseMs);
  refusePoolBudget(connection, planned, broker.listening);
  const dbSystem = dbSystemOf(connection.source.engine, connection.serverLabel);
  const traced = run.telemetryHooks?.publish({ dbSystem });
  run.unsubscribe.push(parts.bindPublisher(traced === undefined ? run.publishMiddleware : [traced, ...run.publishMiddleware], run.publishes));
  if (run.telemetry.enabled) run.observed.databases.push(observedDatabase(database, dbSystem));
  const watch = controlWatchOf(run, parts, database, planned);
  startSubscriptions(run, parts, database, clock, dbSystem, planned, watch);
  run.pruners.push(...pruners(scope.subscribers, database, clock, run.logger, run.kept), ...runPruners(parts.workflows.all(), database, clock, run.logger));
  // Before the first claim: a route paused before this app started claims nothing.
  await watch?.start();
  if (broker.listening) await parts.listen(run.logger);
  // SQLite: other processes' commits to the shared file wake this app's subscriptions (no server relays them).
  await parts.watchFile(run.logger);
}

/** Checks each subscribed table against the database (once per table) and builds its claim strategy. */
async function planClaims(
  run: Startup,
  parts: BrokerParts,
  database: Database,
  clock: Clock,
  brokerLeaseMs: number,
  subscribers: readonly Subscriber[],
): Promise<PlannedSubscription[]> {
  const { connection, routes } = parts;
  const planned: PlannedSubscription[] = [];
  const { workflows } = parts;
  // Every step's table checked once, before any subscription can ack a step and publish the next.
  const targets = subscribers.some((sub) => workflows.hasStepsOn(sub.queue.spec.description)) ? await workflows.targets(routes) : undefined;
  if (targets !== undefined) await checkWorkflowTable(database);
  for (const sub of subscribers) {
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
      keys: connection.keys,
      isClosed: connection.isClosed,
      transactional: sub.queue.options.transactional === true,
      // A batch handler's rows share their claim's transaction in the row-lock form.
      sharedTransaction: sub.queue.options.sharedTransaction === true || sub.kind === "batch",
      batch: sub.queue.options.batch,
      deadLetter: await deadLetterChecked(routes, sub.queue.options.deadLetter),
      parked: new ParkedRows(clock),
      perKey: sub.queue.options.maxInWorkPerKey,
      followUp:
        targets !== undefined && workflows.hasStepsOn(spec)
          ? new WorkflowFollowUp(workflows, database, clock, spec, targets, {
              wake: (table, group) => parts.publisher.wake(table, group),
              // As a publish does: NOTIFY when a connection of the broker listens (listenNotify()).
              notify: () => parts.connection.listening,
            })
          : undefined,
    };
    planned.push({ sub, strategy: await flowControlledStrategy(setup, sub.queue.options), leaseMs, logger: subLogger });
  }
  return planned;
}

/** The acks of workflow steps write the workflow table: a missing one fails the start, not every ack. */
async function checkWorkflowTable(database: Database): Promise<void> {
  const { schema, workflow } = database.dialect;
  const { rows } = await database.execute("schema", schema.describeTable(workflow.table, undefined));
  if (rows.length === 0) throw workflowTableMissing(workflow.table);
}

/** A dead-letter table is checked against the database like a routed one: a missing column fails the start. */
async function deadLetterChecked(routes: RouteTable, declaration: DeadLetterDeclaration | undefined): Promise<DeadLetterTarget | undefined> {
  const target = declaration?.target;
  if (target !== undefined && "table" in target) await routes.table(target.table);
  return target;
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
      subscriber: withMiddleware(sub, run.telemetryHooks === undefined ? run.middleware : [run.telemetryHooks.delivery(place), ...run.middleware]),
      spec,
      options: sub.queue.options,
      strategy,
      clock,
      logger,
      outputs: { publish: async (route, payload) => void (await parts.publisher.publish(route, payload, undefined)) },
      activity: run.activity,
      decodeRetryMs: leaseMs,
      observer: run.observer,
      control: watch?.checkFor(sub.name, spec.table),
    });
    if (run.telemetry.enabled) run.observed.subscriptions.push(observedSubscription(place, () => subscription.inFlight, strategy, database, spec));
    // On a table with a group column the subscription claims its own group: wakes for other groups pass it by.
    const group = spec.group === undefined ? undefined : sub.name;
    const wake = (dueAt?: number) => (dueAt === undefined ? subscription.wake() : subscription.wakeAt(dueAt));
    run.unsubscribe.push(parts.publisher.onPublish(subscription.table, wake, group, () => subscription.waiting));
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
    app: run.appName,
  });
  run.unsubscribe.push(() => watch.stop());
  run.unsubscribe.push(parts.publisher.onPublish(database.dialect.control.table, () => watch.refresh()));
  return watch;
}
