/**
 * The checks that refuse to start an app, each with the error that says why and what to do. Those
 * that need nothing but the declarations run before anything connects; the others as soon as the
 * fact they read is known (the cluster at open, the clock's skew once measured, the pool's budget
 * once every claim is planned).
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { tolerableSkewMs } from "@sqlinbox/database";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import type { ClaimStrategy } from "../claim/claim-strategy.js";
import { exclusiveByLock, formUnsupported, holdsSessionAcrossTransactions } from "../claim/form-facts.js";
import type { Subscriber } from "../declare/subscriber.js";
import {
  clockSkew,
  formOnMultiPrimaryCluster,
  formThroughTransactionPooler,
  listenNeedsOwnPool,
  listenNeedsPostgres,
  listenThroughTransactionPooler,
  noRoute,
  poolTooSmall,
  queueSubscribedTwice,
  routeOnOtherTable,
  routeSubscribedTwice,
  rowLockTableUnsupported,
} from "../errors.js";
import type { Logger } from "../logger.js";
import type { BrokerParts } from "../publish/broker.js";
import type { BrokerConnection, PoolerMode } from "../publish/connection.js";
import type { DatabaseClock } from "../time/database-clock.js";
import type { BrokerScope } from "./broker-scope.js";

/** A subscriber with what its claim was planned to be: enough for the refusals that weigh it. */
interface Planned {
  readonly sub: Subscriber;
  readonly strategy: ClaimStrategy;
  readonly leaseMs: number;
}

/**
 * Before connecting, per subscriber: a declared route on its own table, one subscriber per route
 * in the app and per queue on the broker (`held` frees the queue's claim again), a form the engine
 * has and a pooler in transaction mode can carry.
 */
export function refuseRoutes(parts: BrokerParts, scope: BrokerScope, names: Set<string>, held: Array<() => void>): void {
  const { engine, pooler } = parts.connection.source;
  for (const sub of scope.subscribers) {
    const queueTable = sub.queue.spec.description.table;
    const spec = parts.routes.route(sub.name);
    if (spec === undefined) throw noRoute(sub.name, parts.routes.all, queueTable);
    const { description } = spec;
    if (description.table !== queueTable) throw routeOnOtherTable(sub.name, description.table, queueTable);
    if (names.has(sub.name)) throw routeSubscribedTwice(sub.name);
    names.add(sub.name);
    const place = { subscription: sub.name, table: description.table };
    // A row-lock table on an engine without row locks (SQLite).
    if (formUnsupported(description.form, dialectFor(engine).capabilities)) throw rowLockTableUnsupported(engine, place);
    if (pooler === "transaction" && holdsSessionAcrossTransactions(description.form)) throw formThroughTransactionPooler(description.form, place);
    claimQueue(parts, sub, held);
  }
}

/** The queues (table and route) subscribed on each broker by running apps: a second subscriber is `AlreadySubscribed`. */
const subscribedQueues = new WeakMap<BrokerParts, Set<string>>();

function claimQueue(parts: BrokerParts, sub: Subscriber, held: Array<() => void>): void {
  const queues = subscribedQueues.get(parts) ?? new Set<string>();
  subscribedQueues.set(parts, queues);
  const queue = `${sub.queue.spec.description.table}\u0000${sub.name}`;
  if (queues.has(queue)) throw queueSubscribedTwice({ subscription: sub.name, table: sub.queue.spec.description.table });
  queues.add(queue);
  held.push(() => queues.delete(queue));
}

/** Before connecting: `listenNotify()` needs Postgres, on a session of its own (no pooler in transaction mode). What a declared pooler means is said once in the log. */
export function refuseListenAndSayPooler(listening: boolean, { source }: BrokerConnection, logger: Logger): void {
  if (listening && !dialectFor(source.engine).capabilities.listenNotify) throw listenNeedsPostgres(source.engine, source.label);
  if (listening && source.pooler === "transaction") throw listenThroughTransactionPooler(source.label);
  if (source.pooler !== undefined) logger.info({ database: source.label, pooler: source.pooler }, poolerDecision(source.pooler));
}

function poolerDecision(pooler: PoolerMode): string {
  return pooler === "transaction"
    ? "through a pooler in transaction mode: lease and row-lock tables run; advisory tables and listenNotify() are refused (they keep a session across transactions)"
    : "through a pooler in session mode: every form runs as on a direct connection";
}

/**
 * Once open: on a multi-primary cluster only the forms whose exclusivity is a committed write run
 * (the log says so), and `listenNotify()` needs a pool that can give it a connection of its own.
 */
export function refuseOnOpen(connection: BrokerConnection, scope: BrokerScope, listening: boolean, logger: Logger): void {
  const cluster = connection.cluster;
  if (cluster !== undefined) {
    logger.info(
      { database: connection.source.label, cluster: cluster.kind, nodes: cluster.nodes },
      `a node of a ${cluster.kind} cluster (wsrep_on, ${cluster.nodes} nodes): lease tables run; row-lock and advisory tables are refused (their locks are the node's own)`,
    );
    for (const sub of scope.subscribers) {
      const spec = sub.queue.spec.description;
      if (exclusiveByLock(spec.form)) throw formOnMultiPrimaryCluster(spec.form, cluster, { subscription: sub.name, table: spec.table });
    }
  }
  if (listening && !connection.canListen) throw listenNeedsOwnPool(connection.source.label);
}

/** With `leaseClock: "host"`, a host clock further from the database's than a quarter of the shortest lease refuses the start. */
export function refuseSkew(clock: DatabaseClock, connection: BrokerConnection, planned: readonly Planned[], brokerLeaseMs: number): void {
  if (clock.corrects) return;
  const shortest = planned.reduce<Planned | undefined>((min, p) => (min === undefined || p.leaseMs < min.leaseMs ? p : min), undefined);
  const leaseMs = shortest?.leaseMs ?? brokerLeaseMs;
  const { offsetMs, hostAt, serverAt } = clock.offset;
  if (Math.abs(offsetMs) <= tolerableSkewMs(leaseMs)) return;
  const place = shortest === undefined ? {} : { subscription: shortest.sub.name, table: shortest.sub.queue.spec.description.table };
  throw clockSkew({ hostAt, serverAt, skewMs: -offsetMs }, leaseMs, `${connection.serverLabel} at ${connection.source.label}`, place);
}

/** Refuses to start when the pool cannot hold what the planned subscriptions (and `listenNotify()`) need, showing the arithmetic. */
export function refusePoolBudget(connection: BrokerConnection, planned: readonly Planned[], listenNotify: boolean): void {
  const needs = planned.map(({ sub, strategy }) => ({
    name: sub.name,
    form: strategy.profile.form,
    workers: deliveriesInWork(sub, strategy),
    perDelivery: strategy.profile.connectionsPerDelivery,
  }));
  checkPool(connection, needs, listenNotify);
}

/** Deliveries in work at most: a batch handler holds a whole batch per worker, in one hold where the form shares one (row lock). */
function deliveriesInWork(sub: Subscriber, strategy: ClaimStrategy): number {
  const { workers, batch } = sub.queue.options;
  return sub.kind === "batch" && !strategy.profile.batchSharesHold ? workers * batch : workers;
}

/** Connections one subscription holds at most: one per delivery in work, plus one for handlers, publishes and settlements. */
interface PoolNeed {
  readonly name: string;
  readonly form: ClaimForm;
  readonly workers: number;
  readonly perDelivery: number;
}

function checkPool(state: Pick<BrokerConnection, "poolMax" | "source">, needs: readonly PoolNeed[], listenNotify: boolean): void {
  if (!Number.isFinite(state.poolMax) || dialectFor(state.source.engine).capabilities.singleWriter) return;
  const shares = needs.map((n) => ({ ...n, total: n.workers * n.perDelivery + 1 }));
  const total = shares.reduce((sum, p) => sum + p.total, 0) + (listenNotify ? 1 : 0);
  if (total <= state.poolMax) return;
  throw poolTooSmall(state.poolMax, shares, listenNotify, total);
}
