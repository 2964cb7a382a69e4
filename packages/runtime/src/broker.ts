import type { AnyInboxSpec, InboxDescription, SqlInboxError } from "@sqlinbox/core/internal";
import { checkSchema, clusterOf, dialectFor, type ClusterVariable, type Engine, type MultiPrimaryCluster, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { QueryResult, Transaction } from "kysely";
import type { Activity } from "./activity.js";
import { Database, type AnyKysely } from "./database.js";
import type { OpenedDatabase } from "./drivers/index.js";
import type { ListenClient } from "./drivers/types.js";
import { channelOf, PgListener } from "./listen.js";
import { brokerNotStarted, brokerStopped, closedBeforePublish, connectFailed, listenNeedsOwnPool, noRoute, schemaUnsupported } from "./errors.js";
import { errorFields, type Logger } from "./logger.js";
import { payloadStorageOf, type PayloadStorage } from "./payload.js";
import { chunkRows, publishedRows, type MessageHeaderValues } from "./publish-rows.js";
import { matchRoute } from "./route-match.js";
import type { PublishTelemetry } from "./telemetry/telemetry.js";

/** A routed table as the broker runs it, learned at startup. */
export interface TableRuntime {
  /** Fractional second digits of the lease column. */
  readonly precision: number;
  readonly storage: PayloadStorage;
}

/** Where a broker's database is and how to open it. */
export interface BrokerSource {
  readonly engine: Engine;
  /** What the logs may show of where the database is: never a password. */
  readonly label: string;
  readonly open: () => Promise<OpenedDatabase & { readonly owned: boolean }>;
  /** The connection pooler the user declared between the app and the database, if any. */
  readonly pooler?: PoolerMode | undefined;
}

/**
 * A connection pooler between the app and the database (PgBouncer, ProxySQL…), as declared:
 * `"session"` gives each client a server session for as long as it is connected; `"transaction"`
 * hands each transaction to any server session, so nothing may live on a session between transactions.
 */
export type PoolerMode = "session" | "transaction";

/** The state one broker and every value derived from it share: routes, and the connection once started. */
export class BrokerState {
  readonly source: BrokerSource;
  readonly routes = new Map<string, AnyInboxSpec>();
  readonly #tables = new Map<string, Promise<TableRuntime>>();
  readonly #wakers = new Map<string, Set<() => void>>();
  database: Database | undefined;
  poolMax = Infinity;
  serverLabel = "";
  /** The multi-primary cluster the server is a node of (read at open), if any. */
  cluster: MultiPrimaryCluster | undefined;
  /** Publish spans, set while an app with telemetry runs this broker. */
  publishTelemetry: PublishTelemetry | undefined;
  /** Publishes also `NOTIFY` the table's channel (an app started a `listenNotify()` value of this broker). */
  notifying = false;
  #owned = false;
  #closed = false;
  #logger: Logger | undefined;
  #listen: (() => Promise<ListenClient>) | undefined;
  #connections: (() => number) | undefined;
  #listener: PgListener | undefined;

  constructor(source: BrokerSource) {
    this.source = source;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Opens the pool (loading the driver now) and checks the server's version. */
  async open(logger: Logger, activity: Activity): Promise<Database> {
    if (this.database) return this.database;
    if (this.#closed) throw brokerStopped();
    this.#logger = logger;
    const opened = await this.source.open();
    this.#owned = opened.owned;
    this.poolMax = opened.poolMax;
    this.#listen = opened.listen;
    this.#connections = opened.connections;
    const database = new Database(opened.db, dialectFor(opened.engine), logger, activity);
    let versionRow: RawRow | undefined;
    try {
      versionRow = (await database.execute("schema", database.dialect.schema.serverVersion())).rows[0];
    } catch (error) {
      if (this.#owned) await opened.db.destroy().catch(() => {});
      throw this.#connectFailed(error);
    }
    try {
      this.serverLabel = database.dialect.checkServerVersion(String(versionRow?.version ?? ""));
      if (versionRow !== undefined && "time_probe" in versionRow) database.readsTimeAsDate = versionRow["time_probe"] instanceof Date;
      const clusterRows: ClusterVariable[] = [];
      for (const query of database.dialect.schema.cluster()) clusterRows.push(...(await database.execute("schema", query)).rows);
      this.cluster = clusterOf(clusterRows);
    } catch (error) {
      if (this.#owned) await opened.db.destroy();
      throw error;
    }
    this.database = database;
    logger.info(
      { database: this.source.label, server: this.serverLabel, ...(this.cluster === undefined ? {} : { cluster: this.cluster.kind, nodes: this.cluster.nodes }) },
      "database connected",
    );
    return database;
  }

  /** The first statement failed: a `Connect` error naming the redacted URL, the routes and (with one table) the table. */
  #connectFailed(cause: unknown): SqlInboxError {
    const routes = [...this.routes.keys()];
    const tables = new Set([...this.routes.values()].map((spec) => spec.description.table));
    const place = tables.size === 1 ? { ...(routes.length === 1 ? { subscription: routes[0] } : {}), table: [...tables][0] } : {};
    return connectFailed(this.source.label, routes, cause, place);
  }

  /** The route a name goes to: its exact route, else the longest prefix route (`"reports.*"`). */
  route(name: string): AnyInboxSpec | undefined {
    return matchRoute(this.routes, name);
  }

  /**
   * The schema check of a routed table (once): every described column exists with a fitting type.
   * A first publish runs it on its `via`, which may hold the only connection (SQLite).
   */
  table(spec: InboxDescription, via?: AnyKysely): Promise<TableRuntime> {
    const place = spec.schema === undefined ? spec.table : `${spec.schema}.${spec.table}`;
    const known = this.#tables.get(place);
    if (known) return known;
    const checking = this.#checkTable(spec, via);
    this.#tables.set(place, checking);
    checking.catch(() => this.#tables.delete(place));
    return checking;
  }

  async #checkTable(spec: InboxDescription, via: AnyKysely | undefined): Promise<TableRuntime> {
    const database = this.#require();
    const capabilities = database.dialect.capabilities;
    if (spec.schema !== undefined && !capabilities.tableSchemas) throw schemaUnsupported(capabilities.engine, spec.schema, spec.table);
    const rows = (await database.execute("schema", database.dialect.schema.describeTable(spec.table, spec.schema), via)).rows;
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
      throw listenNeedsOwnPool(this.source.label);
    }
    const tables = [...this.routes.values()].map((spec) => spec.description);
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

  /** One row: `publishMany` with one payload. */
  async publish(name: string, payload: unknown, via: AnyKysely | Transaction<unknown> | undefined, headers?: MessageHeaderValues): Promise<void> {
    await this.publishMany(name, [payload], via, headers);
  }

  /**
   * Inserts one row per payload into the table route `name` goes to: one multi-row insert per chunk
   * of rows that fits the engine's parameter limit, all inside `via` when given (else inside one
   * transaction of their own when there is more than one chunk), then one NOTIFY and one wake.
   * Returns the new ids where the engine can tell them (RETURNING, or MySQL's consecutive insertId).
   */
  async publishMany(name: string, payloads: readonly unknown[], via: AnyKysely | Transaction<unknown> | undefined, headers?: MessageHeaderValues): Promise<unknown[]> {
    const spec = this.route(name);
    if (spec === undefined) throw noRoute(name, this.routes);
    const description = spec.description;
    if (this.#closed) throw closedBeforePublish({ subscription: name, table: description.table });
    const database = this.#require(name);
    const on = via as AnyKysely | undefined;
    const table = await this.table(description, on);
    const rows = publishedRows(description, name, payloads, table.storage, headers);
    if (rows.length === 0) return [];
    const insertAll = async (target: AnyKysely | undefined): Promise<unknown[]> => {
      const ids: unknown[] = [];
      for (const chunk of chunks) {
        const result = await database.execute("publish", database.dialect.publish.insert(description, chunk), target);
        ids.push(...insertedIds(description, chunk, result));
      }
      return ids;
    };
    // One publish span per call; its traceparent goes into every row's headers (they share the call's headers).
    const first = rows[0] as RawRow;
    const trace = this.publishTelemetry?.begin(name, description, first);
    if (trace !== undefined && description.headers !== undefined) for (const row of rows) row[description.headers.name] = first[description.headers.name];
    const chunks = chunkRows(rows, database.dialect.capabilities.maxParameters);
    let ids: unknown[];
    try {
      ids = on === undefined && chunks.length > 1 ? await database.db.transaction().execute((trx) => insertAll(trx)) : await insertAll(on);
      trace?.end(undefined, ids.length === 1 ? ids[0] : undefined);
    } catch (error) {
      trace?.end(error, undefined);
      throw error;
    }
    await this.#notify(name, description, on);
    this.#wakeTable(description.table);
    return ids;
  }

  /**
   * On the same connection or transaction as the insert: inside `{ via: trx }` the notification goes out at commit.
   * Without `via` the rows are already committed: a failed NOTIFY is only a warning (the next poll sees them).
   */
  async #notify(name: string, description: InboxDescription, via: AnyKysely | undefined): Promise<void> {
    if (!this.notifying) return;
    const database = this.#require(name);
    if (database.dialect.notify === null) return;
    const notify = database.execute("publish", database.dialect.notify.notify(channelOf(description)), via);
    if (via !== undefined) return void (await notify);
    await notify.catch((error: unknown) =>
      this.#logger?.warn(
        { ...errorFields(error), subscription: name, table: description.table },
        "listenNotify: NOTIFY failed after the publish committed; other processes see the row at their next poll",
      ),
    );
  }

  /** Closes the pool (when the broker opened it); resolves with the connections it held then. */
  async close(): Promise<number> {
    if (this.#closed) return 0;
    this.#closed = true;
    await this.#listener?.stop();
    if (this.database) await this.database.idle();
    const connections = this.#owned ? (this.#connections?.() ?? 0) : 0;
    if (this.database && this.#owned) await this.database.db.destroy();
    this.#logger?.info({ database: this.source.label, connections }, "database closed");
    return connections;
  }

  #require(subscription?: string): Database {
    if (this.database === undefined) {
      throw brokerNotStarted(subscription);
    }
    return this.database;
  }
}

/**
 * The ids of inserted rows: RETURNING where the engine has it, else consecutive from MySQL's insertId
 * (one insert's auto-increment values are consecutive with the default auto_increment_increment of 1),
 * else the ids given.
 */
function insertedIds(spec: InboxDescription, rows: readonly RawRow[], result: QueryResult<RawRow>): unknown[] {
  const id = spec.id.name;
  if (result.rows.length === rows.length) return result.rows.map((r) => r[id]);
  if (spec.id.generated && result.insertId !== undefined) {
    const first = result.insertId;
    return rows.map((_, i) => {
      const value = first + BigInt(i);
      return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
    });
  }
  return rows.map((r) => r[id]);
}
