import { SqlInboxError, type AnyInboxSpec, type FormOf, type InboxDescription, type RolesOf, type SpecError } from "@sqlinbox/core/internal";
import { checkSchema, dialectFor, type Engine, type RawRow } from "@sqlinbox/kysely-dialects";
import { CompiledQuery, MysqlAdapter, PostgresAdapter, SqliteAdapter, type Kysely, type Transaction } from "kysely";
import type { Activity } from "./activity.js";
import { Database, type AnyKysely } from "./database.js";
import { parseDatabaseUrl, type OpenedDatabase, type PoolOptions } from "./drivers/index.js";
import type { ListenClient } from "./drivers/types.js";
import { channelOf, PgListener } from "./listen.js";
import { errorFields, redactUrl, type Logger } from "./logger.js";
import { encodePayload, payloadStorageOf, type PayloadStorage } from "./payload.js";
import type { PayloadOfSpec } from "./queue.js";
import { wholeSeconds } from "./queue.js";

/** Options of `SqlBroker.fromUrl`. */
export interface BrokerOptions {
  readonly pool?: PoolOptions;
}

/** Options of a publish. */
export interface PublishOptions<DB = unknown> {
  /** Publish inside the caller's own Kysely transaction (or through another Kysely instance). */
  readonly via?: Kysely<DB> | Transaction<DB>;
}

/** A routed table as the broker runs it, learned at startup. */
export interface TableRuntime {
  /** Fractional second digits of the lease column. */
  readonly precision: number;
  readonly storage: PayloadStorage;
}

interface Source {
  readonly engine: Engine;
  /** What the logs may show of where the database is: never a password. */
  readonly label: string;
  readonly open: () => Promise<OpenedDatabase & { readonly owned: boolean }>;
}

/** The state one broker and every value derived from it share: routes, and the connection once started. */
export class BrokerState {
  readonly source: Source;
  readonly routes = new Map<string, AnyInboxSpec>();
  readonly #tables = new Map<string, Promise<TableRuntime>>();
  readonly #wakers = new Map<string, Set<() => void>>();
  database: Database | undefined;
  poolMax = Infinity;
  serverLabel = "";
  /** Publishes also `NOTIFY` the table's channel (an app started a `listenNotify()` value of this broker). */
  notifying = false;
  #owned = false;
  #closed = false;
  #logger: Logger | undefined;
  #listen: (() => Promise<ListenClient>) | undefined;
  #listener: PgListener | undefined;

  constructor(source: Source) {
    this.source = source;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Opens the pool (loading the driver now) and checks the server's version. */
  async open(logger: Logger, activity: Activity): Promise<Database> {
    if (this.database) return this.database;
    if (this.#closed) throw new SqlInboxError("Closed", "this broker was stopped; build a new one to start again");
    this.#logger = logger;
    const opened = await this.source.open();
    this.#owned = opened.owned;
    this.poolMax = opened.poolMax;
    this.#listen = opened.listen;
    const database = new Database(opened.db, dialectFor(opened.engine), logger, activity);
    try {
      const versionRow = (await database.execute("schema", database.dialect.schema.serverVersion())).rows[0];
      this.serverLabel = database.dialect.checkServerVersion(String(versionRow?.version ?? ""));
    } catch (error) {
      if (this.#owned) await opened.db.destroy();
      throw error;
    }
    this.database = database;
    logger.info({ database: this.source.label, server: this.serverLabel }, "database connected");
    return database;
  }

  /** The schema check of a routed table (once): every described column exists with a fitting type. */
  table(spec: InboxDescription): Promise<TableRuntime> {
    const known = this.#tables.get(spec.table);
    if (known) return known;
    const checking = this.#checkTable(spec);
    this.#tables.set(spec.table, checking);
    checking.catch(() => this.#tables.delete(spec.table));
    return checking;
  }

  async #checkTable(spec: InboxDescription): Promise<TableRuntime> {
    const database = this.#require();
    const rows = (await database.execute("schema", database.dialect.schema.describeTable(spec.table))).rows;
    const found = database.dialect.readFoundColumns(rows);
    const precision = checkSchema(spec, found, database.dialect.capabilities.engine)?.precision ?? 0;
    const payloadType = spec.payload === undefined ? undefined : found.find((c) => c.name === spec.payload?.name)?.dataType;
    return { precision, storage: payloadStorageOf(payloadType) };
  }

  /** Whether `listenNotify()` can take a connection of its own (a Postgres broker built from a URL). */
  get canListen(): boolean {
    return this.#listen !== undefined;
  }

  /**
   * `listenNotify()`: publishes notify from now on, and one pool connection listens on the channel
   * of every routed table, waking the table's subscriptions in this process on a notification.
   */
  async startListening(logger: Logger): Promise<void> {
    if (this.#listener !== undefined) return;
    const acquire = this.#listen;
    if (acquire === undefined) {
      throw new SqlInboxError("Declaration", `listenNotify() needs a Postgres broker built with SqlBroker.fromUrl (its own pool connection listens); this broker is ${this.source.label}`);
    }
    const tables = [...this.routes.values()].map((spec) => spec.description.table);
    const listener = new PgListener(acquire, tables, (table) => this.#wakeTable(table), logger);
    await listener.start();
    this.#listener = listener;
    this.notifying = true;
  }

  #wakeTable(table: string): void {
    for (const wake of this.#wakers.get(table) ?? []) wake();
  }

  /** Registers a subscription's wake-up for publishes to `table`. */
  onPublish(table: string, wake: () => void): () => void {
    const set = this.#wakers.get(table) ?? new Set();
    set.add(wake);
    this.#wakers.set(table, set);
    return () => set.delete(wake);
  }

  async publish(name: string, payload: unknown, via: AnyKysely | Transaction<unknown> | undefined): Promise<void> {
    const spec = this.routes.get(name);
    if (spec === undefined) throw noRoute(name, this.routes);
    const description = spec.description;
    if (this.#closed) throw new SqlInboxError("Closed", "the broker is closed: nothing was published", { subscription: name, table: description.table });
    const database = this.#require(name);
    const table = await this.table(description);
    const row: RawRow = {};
    if (description.payload !== undefined) {
      row[description.payload.name] = encodePayload(payload, table.storage);
    } else {
      const values = (payload ?? {}) as Record<string, unknown>;
      for (const col of description.columns) if (!col.generated && col.key in values) row[col.name] = values[col.key];
    }
    if (description.group !== undefined) row[description.group.name] = name;
    await database.execute("publish", database.dialect.publish.insert(description, [row]), via as AnyKysely | undefined);
    // On the same connection or transaction as the insert: inside `{ via: trx }` the notification goes out at commit.
    // Without `via` the row is already committed: a failed NOTIFY is only a warning (the next poll sees the row).
    if (this.notifying) {
      const notify = database.execute("publish", CompiledQuery.raw("select pg_notify($1, '')", [channelOf(description.table)]), via as AnyKysely | undefined);
      if (via !== undefined) await notify;
      else await notify.catch((error: unknown) => this.#logger?.warn({ ...errorFields(error), subscription: name, table: description.table }, "listenNotify: NOTIFY failed after the publish committed; other processes see the row at their next poll"));
    }
    this.#wakeTable(description.table);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#listener?.stop();
    if (this.database) await this.database.idle();
    if (this.database && this.#owned) await this.database.db.destroy();
    this.#logger?.info({ database: this.source.label }, "database closed");
  }

  #require(subscription?: string): Database {
    if (this.database === undefined) {
      throw new SqlInboxError("Closed", "the broker has not started: start the app that routes it first", subscription ? { subscription } : {});
    }
    return this.database;
  }
}

function noRoute(name: string, routes: ReadonlyMap<string, AnyInboxSpec>): SqlInboxError {
  const known = [...routes.keys()].map((n) => `"${n}"`).join(", ") || "none";
  return new SqlInboxError("NoRoute", `no route named "${name}" (declared: ${known}): declare it with broker.route(spec, "${name}")`, { subscription: name });
}

/** Throws `NoRoute` unless the broker declares `name`; returns its spec. */
export function requireRoute(state: BrokerState, name: string): AnyInboxSpec {
  const spec = state.routes.get(name);
  if (spec === undefined) throw noRoute(name, state.routes);
  return spec;
}

function engineOf(db: Kysely<unknown>): Engine {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return "postgres";
  if (adapter instanceof MysqlAdapter) return "mysql";
  if (adapter instanceof SqliteAdapter) return "sqlite";
  throw new SqlInboxError("UnsupportedForm", `a Kysely instance on an unknown dialect (${adapter.constructor.name}): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite`);
}

type Routes = Record<string, AnyInboxSpec>;

/** The engine a URL literal names (`Engine` when the type system cannot tell, e.g. a `string`). */
export type EngineOfUrl<U extends string> = string extends U
  ? Engine
  : U extends `postgres://${string}` | `postgresql://${string}` ? "postgres"
    : U extends `mysql://${string}` | `mariadb://${string}` ? "mysql"
      : U extends `sqlite:${string}` ? "sqlite"
        : Engine;

/** A row-lock table cannot be routed on a SQLite broker: SQLite has no row locks. */
export type RouteAllowed<S extends AnyInboxSpec, E extends Engine> = [E] extends ["sqlite"]
  ? FormOf<RolesOf<S>> extends "rowLock"
    ? SpecError<"SQLite has no row locks: a row-lock table cannot be routed on a SQLite broker; give the table a lease column (.lease(column(\"locked_until\"))) or an advisory key (.advisoryLock(\"…\"))">
    : unknown
  : unknown;
/** `listenNotify()` compiles unless the URL names an engine other than Postgres. */
export type ListenNotifyAllowed<E extends Engine> = [Extract<E, "postgres">] extends [never]
  ? SpecError<"listenNotify() needs Postgres (LISTEN/NOTIFY): on SQLite and MySQL/MariaDB other processes see a publish at their next poll">
  : unknown;
/** A publish's payload type for route `N`: the route's payload when the broker's type knows it. */
export type PublishPayload<R extends Routes, N extends string> = N extends keyof R ? PayloadOfSpec<R[N]> : unknown;

const stateOf = new WeakMap<object, BrokerState>();
/** @internal The shared state behind a broker value. */
export function brokerState(broker: object): BrokerState {
  const state = stateOf.get(broker);
  if (state === undefined) throw new TypeError("not a SqlBroker");
  return state;
}

/**
 * The connection to one database and the routes (names) of its tables.
 * Nothing connects until an app that uses the broker starts.
 *
 * @example
 * const broker = SqlBroker.fromUrl("sqlite:reports.db", { pool: { max: 10 } }).lease(minutes(1))
 * app.withBroker(broker.route(RenderReport, "reports"), (b) => b.include(render))
 * await broker.publish("reports", { title: "Q3" })
 */
export class SqlBroker<R extends Routes = Record<never, never>, E extends Engine = Engine> {
  /** The default lease of this broker's subscriptions, in ms (whole seconds). */
  readonly leaseMs: number;
  /** Whether an app started with this value listens for (and sends) Postgres notifications: `listenNotify()`. */
  readonly listening: boolean;
  /** @internal phantom: the engine the URL names, when the type system can read it. */
  declare readonly "~engine"?: E;

  private constructor(state: BrokerState, leaseMs: number, listening = false) {
    this.leaseMs = leaseMs;
    this.listening = listening;
    stateOf.set(this, state);
    Object.freeze(this);
  }

  /**
   * A broker on a database URL: `postgres://`, `mysql://`, `mariadb://`, `sqlite::memory:`, `sqlite:path`.
   * The driver (`pg`, `mysql2`, `better-sqlite3`) is imported only when the app starts.
   */
  static fromUrl<const U extends string>(url: U, options: BrokerOptions = {}): SqlBroker<Record<never, never>, EngineOfUrl<U>> {
    const parsed = parseDatabaseUrl(url);
    const pool = options.pool ?? {};
    return new SqlBroker(
      new BrokerState({
        engine: parsed.engine,
        label: redactUrl(url),
        open: async () => ({ ...(await parsed.open(pool)), owned: true }),
      }),
      30_000,
    );
  }

  /** A broker on the application's own Kysely instance; the broker never destroys it. */
  static fromKysely<DB>(db: Kysely<DB>): SqlBroker {
    const anyDb = db as unknown as AnyKysely;
    const engine = engineOf(anyDb);
    return new SqlBroker(new BrokerState({ engine, label: `kysely (${engine})`, open: async () => ({ db: anyDb, engine, poolMax: Infinity, owned: false }) }), 30_000);
  }

  /** The engine the URL or the Kysely instance names. */
  get engine(): Engine {
    return brokerState(this).source.engine;
  }

  /** This broker's default lease (30 s unless set); whole seconds, rounded up. */
  lease(ms: number): SqlBroker<R, E> {
    return new SqlBroker(brokerState(this), wholeSeconds(ms), this.listening);
  }

  /**
   * Postgres only: wakes subscriptions in other processes too. An app started with this value takes
   * one pool connection for its life and `LISTEN`s on a channel per routed table (`sqlinbox_<table>`,
   * hashed past 63 bytes); every publish also runs `select pg_notify(channel, '')` on the insert's
   * connection or transaction (so `{ via: trx }` notifies at commit, and a rollback notifies nobody).
   * A SQLite or MySQL/MariaDB URL does not compile; any other non-Postgres broker, or one built
   * with `fromKysely`, is refused when the app starts.
   */
  listenNotify(this: SqlBroker<R, E> & ListenNotifyAllowed<E>): SqlBroker<R, E> {
    return new SqlBroker(brokerState(this), this.leaseMs, true);
  }

  /** Declares route `name` on the table `spec` describes. Every value of this broker sees it. */
  route<S extends AnyInboxSpec, N extends string>(spec: S & RouteAllowed<S, E>, name: N): SqlBroker<R & { [K in N]: S }, E> {
    const state = brokerState(this);
    const known = state.routes.get(name);
    if (known !== undefined && known.description.table !== spec.description.table) {
      throw new SqlInboxError("Declaration", `route "${name}" is already declared on table "${known.description.table}"`, { subscription: name, table: spec.description.table });
    }
    state.routes.set(name, spec);
    return new SqlBroker(state, this.leaseMs, this.listening);
  }

  /**
   * Publishes a payload to route `name` (JSON: UTF-8 bytes in a binary column, text otherwise).
   * Pass `{ via: trx }` to insert inside your own Kysely transaction: the row commits with your writes.
   * Wakes this process's subscriptions of the table at once. Fails with `NoRoute` on an undeclared
   * name and `Closed` before the app starts or after it stopped.
   */
  async publish<N extends string, DB = unknown>(name: N, payload: PublishPayload<R, N>, options: PublishOptions<DB> = {}): Promise<void> {
    await brokerState(this).publish(name, payload, options.via as unknown as AnyKysely | undefined);
  }
}
