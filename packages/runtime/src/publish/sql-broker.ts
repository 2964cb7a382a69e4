import { parseDatabaseUrl, pauseRoute, redactSecrets, redactUrl, resumeRoute, type CancelResult, type EngineOfUrl, type PoolOptions } from "@sqlinbox/database";
import type { AnyInboxSpec, AnyWorkflow, SpecError, WorkflowInput } from "@sqlinbox/core/internal";
import { dialectFor, type Engine } from "@sqlinbox/kysely-dialects";
import type { Kysely, Transaction } from "kysely";
import { BrokerParts } from "./broker.js";
import type { PoolerMode } from "./connection.js";
import type { AnyKysely } from "../drivers/database.js";
import { engineOfKysely } from "../drivers/engine-of-kysely.js";
import { listenConnector, type ListenSource } from "./listen-source.js";
import type { Logger } from "../logger.js";
import { rowOptions } from "./publish-rows.js";
import type { Published } from "./publisher.js";
import { cancelJob, JobHandle, type JobId, type JobOptions, type JobSpecOf } from "./job-handle.js";
import { JobList } from "./job-list.js";
import { retryJobNow, updateJob, type JobChanges, type JobChangesFor, type UpdateResult } from "./job-update.js";
import { wholeSeconds } from "../declare/queue.js";
import type {
  KnownRoute,
  ListenNotifyAllowed,
  PublishManyOptions,
  PublishManyOptionsFor,
  PublishOptions,
  PublishOptionsFor,
  PublishPayload,
  RouteAllowed,
  RouteName,
  RouteSpecOf,
  Routes,
} from "./publish-options.js";
import { startRun, WorkflowRun } from "../workflow/workflow-run.js";

export type { EngineOfUrl } from "@sqlinbox/database";
export type { Published } from "./publisher.js";
export type { CancelResult } from "@sqlinbox/database";
export type {
  DataColumns,
  KnownRoute,
  ListenNotifyAllowed,
  PublishManyOptions,
  PublishManyOptionsFor,
  PublishOptions,
  PublishOptionsFor,
  PublishPayload,
  RouteAllowed,
  RouteName,
  RouteSpecOf,
} from "./publish-options.js";

/** Options of `SqlBroker.fromUrl`. */
export interface BrokerOptions {
  readonly pool?: PoolOptions;
  /**
   * The connection pooler between the app and the database, if any (sqlinbox cannot tell one from
   * a server). `"transaction"` (PgBouncer's `pool_mode = transaction`): the lease and row-lock forms
   * run; the advisory form and `listenNotify()`, which keep a session across transactions, are
   * refused at startup with `UnsupportedForm`. `"session"`: every form runs, as on a direct connection.
   */
  readonly pooler?: PoolerMode;
  /**
   * Postgres: run the statements the broker repeats (its claims, acks, publishes) as named prepared
   * statements, which each database session parses once and, from their sixth run, plans once (when Postgres
   * finds the generic plan no dearer) instead of on every run. Default:
   * on, and off with `pooler: "transaction"`, since a transaction pooler hands each transaction any
   * server session (PgBouncer 1.21+ with `max_prepared_statements` carries them: set `true` there).
   * Should the server still say a statement's name is missing or taken, that statement fails and the
   * broker stops naming statements. Other engines: ignored.
   */
  readonly preparedStatements?: boolean;
  /**
   * Where the connection logs when a publish opens it (a producer with no app): by default
   * warnings and errors on the console. An app that starts the broker first logs to its own logger.
   */
  readonly logger?: Logger;
}

/** Options of `SqlBroker.fromKysely`. */
export interface FromKyselyOptions {
  /** The connection pooler between the Kysely instance and the database, if any: as `BrokerOptions.pooler`. */
  readonly pooler?: PoolerMode;
  /** As `BrokerOptions.logger`. */
  readonly logger?: Logger;
  /**
   * Where `listenNotify()` takes the connection it holds for the app's life (Postgres): a factory
   * of fresh `pg` clients (`() => new pg.Client(url)`, connected and ended by the broker) or a `pg`
   * pool of its own. Without it, `listenNotify()` on this broker is refused at startup.
   */
  readonly listen?: ListenSource;
}

const partsOf = new WeakMap<object, BrokerParts>();
/** @internal What every value of a broker shares: its connection, routes and publisher. */
export function brokerParts(broker: object): BrokerParts {
  const parts = partsOf.get(broker);
  if (parts === undefined) throw new TypeError("not a SqlBroker");
  return parts;
}

/**
 * The connection to one database and the routes (names) of its tables.
 * Nothing connects until an app that uses the broker starts, or until its first publish: a
 * process that only publishes needs no app, and ends its pool with `close()`.
 *
 * @example
 * const broker = SqlBroker.fromUrl("sqlite:reports.db", { pool: { max: 10 } }).lease(minutes(1)).route(RenderReport, "reports")
 * app.withBroker(broker, (b) => b.include(render))
 * await broker.publish("reports", { title: "Q3" })
 */
export class SqlBroker<R extends Routes = Record<never, never>, E extends Engine = Engine> {
  /** The default lease of this broker's subscriptions, in ms (whole seconds). */
  readonly leaseMs: number;
  /** Whether publishes on this value send Postgres notifications, and an app started with it listens for them: `listenNotify()`. */
  readonly listening: boolean;
  /** @internal phantom: the engine the URL names, when the type system can read it. */
  declare readonly "~engine"?: E;

  private constructor(parts: BrokerParts, leaseMs: number, listening = false) {
    this.leaseMs = leaseMs;
    this.listening = listening;
    partsOf.set(this, parts);
    Object.freeze(this);
  }

  /**
   * A broker on a database URL: `postgres://`, `mysql://`, `mariadb://`, `sqlite::memory:`, `sqlite:path`.
   * The driver (`pg`, `mysql2`, `better-sqlite3`) is imported only when the app starts.
   */
  static fromUrl<const U extends string>(url: U, options: BrokerOptions = {}): SqlBroker<Record<never, never>, EngineOfUrl<U>> {
    const parsed = parseDatabaseUrl(url);
    const pool = { ...options.pool, preparedStatements: options.preparedStatements ?? options.pooler !== "transaction" };
    return new SqlBroker(
      new BrokerParts(
        {
          engine: parsed.engine,
          label: redactUrl(url),
          redact: (text: string) => redactSecrets(text, url),
          open: async () => ({ ...(await parsed.open(pool)), owned: true }),
          pooler: options.pooler,
        },
        options.logger,
      ),
      30_000,
    );
  }

  /**
   * A broker on the application's own Kysely instance; the broker never destroys it. Give
   * `{ listen }` (a `pg` client factory or pool of its own) to use `listenNotify()` on Postgres.
   */
  static fromKysely<DB>(db: Kysely<DB>, options: FromKyselyOptions = {}): SqlBroker {
    const anyDb = db as unknown as AnyKysely;
    const engine = engineOfKysely(anyDb);
    const listen = options.listen === undefined || !dialectFor(engine).capabilities.listenNotify ? {} : { listen: listenConnector(options.listen) };
    const source = { engine, label: `kysely (${engine})`, open: async () => ({ db: anyDb, engine, poolMax: Infinity, owned: false, ...listen }), pooler: options.pooler };
    return new SqlBroker(new BrokerParts(source, options.logger), 30_000);
  }

  /** The engine the URL or the Kysely instance names. */
  get engine(): Engine {
    return brokerParts(this).connection.source.engine;
  }

  /** This broker's default lease (30 s unless set); whole seconds, rounded up. */
  lease(ms: number): SqlBroker<R, E> {
    return new SqlBroker(brokerParts(this), wholeSeconds(ms), this.listening);
  }

  /**
   * Postgres only: wakes subscriptions in other processes too. An app started with this value takes
   * one pool connection for its life and `LISTEN`s on a channel per routed table (`sqlinbox_<table>`,
   * hashed past 63 bytes). Every publish on this value notifies that channel (the dialect's `notify` group) on the
   * insert's connection or transaction (so `{ via: trx }` notifies at commit, and a rollback notifies nobody),
   * whether or not an app runs the broker: a process that only publishes sets it too, or workers elsewhere
   * see its rows only at their next poll. While a listening app runs the broker, every value of it notifies.
   * A SQLite or MySQL/MariaDB URL does not compile; any other non-Postgres broker, or one built
   * with `fromKysely` without `{ listen }`, is refused when the app starts.
   */
  listenNotify(this: SqlBroker<R, E> & ListenNotifyAllowed<E>): SqlBroker<R, E> {
    return new SqlBroker(brokerParts(this), this.leaseMs, true);
  }

  /**
   * Declares route `name` on the table `spec` describes. Every value of this broker sees it.
   * A name ending in `*` is a prefix route: `"reports.*"` takes every name that starts with
   * `"reports."`; an exact route beats a prefix and the longest prefix wins. On a table with a
   * group column the published name (`"reports.daily"`) is the group value, and a subscription
   * on that name claims that group.
   */
  route<S extends AnyInboxSpec, N extends string>(allowed: RouteAllowed<S, E> extends SpecError<string> ? RouteAllowed<S, E> : S, name: N): SqlBroker<R & { [K in N]: S }, E> {
    const spec = allowed as S;
    const parts = brokerParts(this);
    parts.routes.declare(name, spec);
    return new SqlBroker(parts, this.leaseMs, this.listening);
  }

  /**
   * Publishes a payload to route `name` (JSON: UTF-8 bytes in a binary column, text otherwise),
   * with what the table has columns for: `priority`, `runAt` or `delay`, data `columns`, a dedup
   * `key`, `headers`. Pass `{ via: trx }` to insert inside your own Kysely transaction: the row
   * commits with your writes, and this process's subscriptions are woken after that commit (never
   * on a rollback); otherwise they are woken at once. Connects on the first use when no app has
   * (a producer). Resolves to the row's `{ id, created }`: `created: false` when a row already held
   * the key (its id). Fails with `NoRoute` on an undeclared name and `Closed` after `close()` or
   * after the app that ran the broker stopped.
   */
  async publish<N extends string, DB = unknown>(name: N & KnownRoute<R, N>, payload: PublishPayload<R, N>, options?: PublishOptionsFor<R, N, DB>): Promise<Published> {
    const { via, ...rest } = (options ?? {}) as PublishOptions<DB>;
    return brokerParts(this).publisher.publish(
      name,
      payload,
      via as unknown as AnyKysely | undefined,
      rowOptions(rest, rest.key === undefined ? undefined : [rest.key]),
      this.listening,
    );
  }

  /**
   * Publishes many payloads to route `name` in one multi-row insert per chunk (each chunk within
   * the engine's parameter limit), inside `{ via: trx }` when given, else in one transaction when
   * there is more than one chunk (or keys); one wake and one NOTIFY per call. The options apply
   * to every row, but `keys` (one per payload) and `columns` given as a function of each payload.
   * Resolves to one `{ id, created }` per payload, in order; payloads sharing a key insert one row.
   */
  async publishMany<N extends string, DB = unknown>(
    name: N & KnownRoute<R, N>,
    payloads: readonly PublishPayload<R, N>[],
    options?: PublishManyOptionsFor<R, N, DB>,
  ): Promise<Published[]> {
    const { via, keys, ...rest } = (options ?? {}) as PublishManyOptions<DB>;
    return brokerParts(this).publisher.publishMany(name, payloads, via as unknown as AnyKysely | undefined, rowOptions(rest, keys), this.listening);
  }

  /**
   * Pauses route `name` in every process: each app's subscription of that name (or of a name the
   * prefix route `"reports.*"` takes) stops claiming within its poll interval (at once on Postgres
   * with `listenNotify()`); deliveries in work finish, and rows it claimed ahead go back. The pause
   * is a row in the control table (`createControlTable`), so it outlives restarts: an app that
   * starts while its route is paused claims nothing until `resume`. Connects like a first publish
   * when no app has. Fails with `Schema` when the control table does not exist.
   */
  async pause(name: RouteName<R>): Promise<void> {
    const parts = brokerParts(this);
    await pauseRoute((await parts.database()).controlPlace, name, (await parts.clock()).now());
  }

  /** Ends the pause of route `name` everywhere; resolves `false` when it was not paused. */
  async resume(name: RouteName<R>): Promise<boolean> {
    return resumeRoute((await brokerParts(this).database()).controlPlace, name);
  }

  /**
   * Cancels row `id` of the table route `name` goes to. A row not in work is removed (deleted, or
   * marked processed where the table has a processedAt column) and never starts: `"removed"`. A row
   * in work has its `ctx.signal` aborted with a `Cancelled` reason in whichever process runs it,
   * within that app's poll interval (at once on Postgres with `listenNotify()`): `"signalled"`;
   * its outcome settles as a drop unless the handler returns another. `"not found"`: no such row,
   * or it is done. Fails with `NoRoute` on an undeclared name, `Schema` without the control table.
   */
  cancel(name: RouteName<R>, id: unknown): Promise<CancelResult> {
    return cancelJob(brokerParts(this), name, id);
  }

  /** Job `id` of route `name` (its id, or what `publish` resolved to): `state()`, `finished()`, `cancel()`; see `JobHandle`. */
  job<N extends string, D = never>(name: N & KnownRoute<R, N>, id: JobId, options?: JobOptions<JobSpecOf<RouteSpecOf<R, N>>, D>): JobHandle<JobSpecOf<RouteSpecOf<R, N>>> {
    return new JobHandle(brokerParts(this), name, id, options as object);
  }

  /**
   * The jobs of route `name`, a page at a time: `list({ state, key, columns, limit, after })`; see
   * `JobList`. `options.deadLetter`, as `job()` takes it, is where `deadLettered` jobs are listed from.
   */
  jobs<N extends string, D = never>(name: N & KnownRoute<R, N>, options?: JobOptions<JobSpecOf<RouteSpecOf<R, N>>, D>): JobList<JobSpecOf<RouteSpecOf<R, N>>> {
    return new JobList(brokerParts(this), name, (options as { deadLetter?: AnyInboxSpec | { readonly group: string } } | undefined)?.deadLetter);
  }

  /**
   * Changes row `id` of route `name` (its `payload`, `runAt`, `priority`, data `columns`, each typed by the table) unless it
   * is in work, in one statement fenced as a cancel is, on the database's clock: `"updated"`, `"running"` (left alone) or `"gone"` (no row, or done).
   */
  update<N extends string>(name: N & KnownRoute<R, N>, id: JobId, changes: JobChangesFor<RouteSpecOf<R, N>>): Promise<UpdateResult> {
    return updateJob(brokerParts(this), name, id, changes as JobChanges);
  }

  /** Makes row `id` of route `name` due now (its run-at set to the database's now) unless it is in work: answers as `update`. */
  retryNow<N extends string>(name: N & KnownRoute<R, N>, id: JobId): Promise<UpdateResult> {
    return retryJobNow(brokerParts(this), name, id);
  }

  /**
   * Registers workflow `w` on this broker: each of its steps publishes to the route of its name (or
   * its `route` option), which must be declared already and go to the step's table. An app that runs
   * this broker then writes each step's result and releases the steps now due in the transaction of
   * the step job's ack; `startWorkflow` starts a run. Every value of the broker sees it.
   */
  workflow<W extends AnyWorkflow>(w: W): SqlBroker<R, E> {
    const parts = brokerParts(this);
    parts.workflows.add(w, parts.routes);
    return new SqlBroker(parts, this.leaseMs, this.listening);
  }

  /**
   * Starts a run of workflow `w` with `input`: its rows in the workflow table (`createWorkflowTable`)
   * and the jobs of the steps that wait for nothing, in one transaction — `{ via: trx }`'s, so the run
   * starts only if your transaction commits, or one of its own. Resolves to the run's handle.
   */
  startWorkflow<W extends AnyWorkflow, DB = unknown>(w: W, input: WorkflowInput<W>, options: { readonly via?: Kysely<DB> | Transaction<DB> } = {}): Promise<WorkflowRun<W>> {
    return startRun(brokerParts(this), w, input, options.via as unknown as AnyKysely | undefined, this.listening);
  }

  /** The run `id` of workflow `w` (its `id`, kept from `startWorkflow`): `state()`, `finished()`, `cancel()`. */
  workflowRun<W extends AnyWorkflow>(w: W, id: string): WorkflowRun<W> {
    return new WorkflowRun(brokerParts(this), w, id);
  }

  /** Cancels run `id` of workflow `w`: `broker.workflowRun(w, id).cancel()`. */
  cancelWorkflow<W extends AnyWorkflow>(w: W, id: string): Promise<boolean> {
    return this.workflowRun(w, id).cancel();
  }

  /**
   * Ends the pool of a broker that only publishes (opened by its first publish), after the
   * statements in flight; later publishes fail with `Closed`. Every value of the broker shares it.
   * On a broker an app runs it does nothing and resolves `false`: the app's `stop()` ends the pool.
   * Resolves `true` once the pool is closed (at once when it never opened or is already closed).
   */
  close(): Promise<boolean> {
    return brokerParts(this).close();
  }
}
