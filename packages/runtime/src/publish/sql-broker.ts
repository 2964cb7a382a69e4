import { parseDatabaseUrl, pauseRoute, redactSecrets, redactUrl, resumeRoute, type CancelResult, type EngineOfUrl, type PoolOptions } from "@sqlinbox/database";
import type { AnyInboxSpec, DataOf, HasLeaseColumn, HasRole, IsRowLockForm, RoleMarker, RolesOf, SpecError } from "@sqlinbox/core/internal";
import { dialectFor, type Engine, type EngineSupports } from "@sqlinbox/kysely-dialects";
import type { Kysely, Transaction } from "kysely";
import { BrokerParts } from "./broker.js";
import type { PoolerMode } from "./connection.js";
import type { AnyKysely } from "../drivers/database.js";
import { engineOfKysely } from "../drivers/engine-of-kysely.js";
import { listenConnector, type ListenSource } from "./listen-source.js";
import type { Logger } from "../logger.js";
import { rowOptions, type MessageHeaderValues } from "./publish-rows.js";
import type { Published } from "./publisher.js";
import { cancelJob, JobHandle, type JobId, type JobOptions, type JobSpecOf } from "./job-handle.js";
import { JobList } from "./job-list.js";
import { retryJobNow, updateJob, type JobChanges, type JobChangesFor, type UpdateResult } from "./job-update.js";
import { wholeSeconds, type PayloadOfSpec } from "../declare/queue.js";

export type { EngineOfUrl } from "@sqlinbox/database";
export type { Published } from "./publisher.js";
export type { CancelResult } from "@sqlinbox/database";

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

/**
 * Options of a publish, as the runtime reads them; on a routed broker each is typed by the route's
 * table (`PublishOptionsFor`), and one the table has no column for does not compile.
 */
export interface PublishOptions<DB = unknown> {
  /** Publish inside the caller's own Kysely transaction (or through another Kysely instance). */
  readonly via?: Kysely<DB> | Transaction<DB>;
  /** Metadata for the headers column (a W3C `traceparent`, …), read by handlers as `keys.headers`. */
  readonly headers?: MessageHeaderValues;
  /** The priority column's value (lower is claimed first). */
  readonly priority?: number;
  /** No claim before this time: stored in the retryAfter column, else in the lease column. */
  readonly runAt?: Date;
  /** No claim before this many ms from now, on the database's clock (see `AppInfo.leaseClock`): `runAt` by another name. */
  readonly delay?: number;
  /** Data columns, by key. */
  readonly columns?: Readonly<Record<string, unknown>>;
  /** The dedup key: a row holding it already means nothing is inserted, and its id comes back with `created: false`. */
  readonly key?: string;
  /**
   * Debounce: a row already holding the key takes this publish's payload, run-at, priority and data
   * columns unless it is in work (`replaced` says which). Lease tables with a retryAfter column.
   */
  readonly replace?: boolean;
}

/** Options of `publishMany`: a publish's, with one key per payload and the data columns for all rows or per payload. */
export interface PublishManyOptions<DB = unknown> extends Omit<PublishOptions<DB>, "key" | "columns"> {
  readonly columns?: Readonly<Record<string, unknown>> | ((payload: never, index: number) => Readonly<Record<string, unknown>>);
  /** One dedup key per payload, in order (`undefined`: that row has none). */
  readonly keys?: readonly (string | undefined)[];
}

type Routes = Record<string, AnyInboxSpec>;

/** The prefix routes of `R` that take `N` (`"reports.*"` takes `"reports.daily"`). */
type PrefixRoutesOf<R extends Routes, N extends string> = {
  [K in keyof R & string]: K extends `${infer P}*` ? (N extends `${P}${string}` ? K : never) : never;
}[keyof R & string];
/**
 * The spec route `N` goes to: its exact route, else the prefix routes that take it (their union:
 * the longest wins at run time), `never` when the broker's type knows none.
 */
export type RouteSpecOf<R extends Routes, N extends string> = N extends keyof R ? R[N] : R[PrefixRoutesOf<R, N>];

/**
 * A publish's name compiles when the broker's type routes it (exactly or by a prefix route), or
 * when it is a `string` only known at run time (then an unrouted name fails with `NoRoute`).
 */
export type KnownRoute<R extends Routes, N extends string> = string extends N
  ? unknown
  : N extends keyof R
    ? unknown
    : [PrefixRoutesOf<R, N>] extends [never]
      ? SpecError<"this broker's type routes no such name: declare it with .route(spec, name) and publish on the broker .route() returns">
      : unknown;

type When<Has extends boolean, Option, Message extends string> = Has extends true ? Option : { readonly [K in keyof Option]?: SpecError<Message> };
type HeadersPart<R extends readonly RoleMarker[]> = When<
  HasRole<R, "headers">,
  { readonly headers?: MessageHeaderValues },
  "publish(…, { headers }) needs a headers column: describe one with field.headers() or .headers(column(…))"
>;
type PriorityPart<R extends readonly RoleMarker[]> = When<
  HasRole<R, "priority">,
  { readonly priority?: number },
  "publish(…, { priority }) needs a priority column: describe one with field.priority() or .priority(column(…))"
>;
type RunAtPart<R extends readonly RoleMarker[]> = When<
  HasRole<R, "retryAfter"> extends true ? true : HasLeaseColumn<R>,
  { readonly runAt?: Date; readonly delay?: number },
  "publish(…, { runAt, delay }) needs somewhere to store the time: a retryAfter column (field.retryAfter()) or a lease column"
>;
type KeyPart<R extends readonly RoleMarker[], Many extends boolean> = When<
  HasRole<R, "key">,
  Many extends true ? { readonly keys?: readonly (string | undefined)[] } : { readonly key?: string },
  "a publish with a key needs a dedup key column: describe one with field.key() or .key(column(…))"
>;
/**
 * `replace: true` debounces the row that holds the publish's key, so it comes with the key: without one,
 * each publish would insert a new row while the caller believes it debounces. A publish that sets
 * `replace: true` and no key fails to compile: "Property 'key' is missing … but required in type 'KeyForReplace'".
 */
interface KeyForReplace {
  readonly key: string;
  readonly replace?: boolean;
}
/** `KeyForReplace` for `publishMany`: `replace: true` comes with the rows' `keys`. */
interface KeysForReplace {
  readonly keys: readonly (string | undefined)[];
  readonly replace?: boolean;
}
type ReplaceWithKey<Many extends boolean> =
  | (Many extends true ? KeysForReplace : KeyForReplace)
  | ((Many extends true ? { readonly keys?: readonly (string | undefined)[] | undefined } : { readonly key?: string | undefined }) & {
      readonly replace?: false | SpecError<"replace: true debounces the row that holds the publish's key: give the publish a key (key: …; keys on publishMany)">;
    });
type ReplacePart<R extends readonly RoleMarker[], Many extends boolean> =
  HasRole<R, "key"> extends true
    ? HasLeaseColumn<R> extends true
      ? HasRole<R, "retryAfter"> extends true
        ? ReplaceWithKey<Many>
        : ReplaceRefused
      : ReplaceRefused
    : ReplaceRefused;
type ReplaceRefused = {
  readonly replace?: SpecError<"replace needs a dedup key column, a lease column (it tells a row in work) and a retryAfter column (it holds the run-at)">;
};
export type DataColumns<S> = { readonly [K in keyof DataOf<S>]?: DataOf<S>[K] };
type ColumnsPart<S extends AnyInboxSpec, Many extends boolean> = [keyof DataOf<S>] extends [never]
  ? { readonly columns?: SpecError<"publish(…, { columns }) sets data columns: this table describes none (field.data() or .data(column(…)))"> }
  : { readonly columns?: DataColumns<S> | (Many extends true ? (payload: PayloadOfSpec<S>, index: number) => DataColumns<S> : never) };

/** Every option a publish to a table of spec `S` takes, each typed by the table; every option, loosely typed, when the broker's type does not know the route (a name given as a `string`). */
type SpecOptions<S, Many extends boolean> = [S] extends [never]
  ? Omit<Many extends true ? PublishManyOptions : PublishOptions, "via">
  : S extends AnyInboxSpec
    ? HeadersPart<RolesOf<S>> & PriorityPart<RolesOf<S>> & RunAtPart<RolesOf<S>> & KeyPart<RolesOf<S>, Many> & ReplacePart<RolesOf<S>, Many> & ColumnsPart<S, Many>
    : unknown;
/** The options of a publish to route `N`: each only where its table has a column for it. */
export type PublishOptionsFor<R extends Routes, N extends string, DB> = { readonly via?: Kysely<DB> | Transaction<DB> } & SpecOptions<RouteSpecOf<R, N>, false>;
/** The options of a `publishMany` to route `N`. */
export type PublishManyOptionsFor<R extends Routes, N extends string, DB> = { readonly via?: Kysely<DB> | Transaction<DB> } & SpecOptions<RouteSpecOf<R, N>, true>;

/** A row-lock table cannot be routed on a broker whose engine has no row locks (SQLite). */
export type RouteAllowed<S extends AnyInboxSpec, E extends Engine> = [EngineSupports<E, "rowLock">] extends [false]
  ? IsRowLockForm<RolesOf<S>> extends true
    ? SpecError<'SQLite has no row locks: a row-lock table cannot be routed on a SQLite broker; give the table a lease column (.lease(column("locked_until"))) or an advisory key (.advisoryLock("…"))'>
    : unknown
  : unknown;
/** `listenNotify()` compiles unless the URL names an engine without LISTEN/NOTIFY (every engine but Postgres). */
export type ListenNotifyAllowed<E extends Engine> = [true] extends [EngineSupports<E, "listenNotify">]
  ? unknown
  : SpecError<"listenNotify() needs Postgres (LISTEN/NOTIFY): on SQLite and MySQL/MariaDB other processes see a publish at their next poll">;
/** A route name: one the broker's type knows, or any `string` known only at run time. */
export type RouteName<R extends Routes> = (keyof R & string) | (string & Record<never, never>);

/** A publish's payload type for route `N`: the route's payload when the broker's type knows it (exact or by prefix). */
export type PublishPayload<R extends Routes, N extends string> = [RouteSpecOf<R, N>] extends [never] ? unknown : PayloadOfSpec<RouteSpecOf<R, N>>;

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
    const pool = options.pool ?? {};
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
   * Ends the pool of a broker that only publishes (opened by its first publish), after the
   * statements in flight; later publishes fail with `Closed`. Every value of the broker shares it.
   * On a broker an app runs it does nothing and resolves `false`: the app's `stop()` ends the pool.
   * Resolves `true` once the pool is closed (at once when it never opened or is already closed).
   */
  close(): Promise<boolean> {
    return brokerParts(this).close();
  }
}
