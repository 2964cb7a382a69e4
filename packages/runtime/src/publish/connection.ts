import type { AnyInboxSpec, SqlInboxError } from "@sqlinbox/core/internal";
import { type ClusterVariable, clusterOf, dialectFor, type Engine, type MultiPrimaryCluster, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { Activity } from "../activity.js";
import { Database } from "../drivers/database.js";
import type { ListenClient, OpenedDatabase } from "@sqlinbox/database";
import { KeyRegistry } from "../claim/held/key-registry.js";
import { brokerNotStarted, brokerStopped, connectFailed, listenNeedsOwnPool } from "../errors.js";
import type { Logger } from "../logger.js";
import type { ChannelTable } from "@sqlinbox/kysely-dialects/internal";
import { databaseFile, FileWatch } from "./file-watch.js";
import { PgListener } from "./listen.js";

/** Where a broker's database is and how to open it. */
export interface BrokerSource {
  readonly engine: Engine;
  /** What the logs may show of where the database is: never a password. */
  readonly label: string;
  /** What a message may show of a driver's error: the URL's secrets hidden where the driver repeats one. */
  readonly redact?: (text: string) => string;
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

/**
 * One broker's connection to its database: the pool (opened once, by whoever starts first), the
 * server's version, the connection `listenNotify()` holds, and the close.
 */
export class BrokerConnection {
  readonly source: BrokerSource;
  /** The advisory keys and cap places in work in this process on this database: what every claim on it shares. */
  readonly keys = new KeyRegistry();
  #database: Database | undefined;
  #opening: Promise<Database> | undefined;
  #closing: Promise<number> | undefined;
  #poolMax = Infinity;
  #serverLabel = "";
  #cluster: MultiPrimaryCluster | undefined;
  #owned = false;
  #closed = false;
  #logger: Logger | undefined;
  #listen: (() => Promise<ListenClient>) | undefined;
  #connections: (() => number) | undefined;
  #listener: PgListener | undefined;
  #fileWatch: FileWatch | undefined;

  constructor(source: BrokerSource) {
    this.source = source;
  }

  /** The open database; `undefined` before `open()`. */
  get database(): Database | undefined {
    return this.#database;
  }

  /** The most connections the pool holds (`Infinity` when unknown: a Kysely instance of the application's). */
  get poolMax(): number {
    return this.#poolMax;
  }

  /** The server and its version, as the logs show it (`PostgreSQL 16.4`, `MariaDB 11.4.2`). */
  /** The multi-primary cluster the server is a node of (read at open), if any. */
  get cluster(): MultiPrimaryCluster | undefined {
    return this.#cluster;
  }

  get serverLabel(): string {
    return this.#serverLabel;
  }

  /** The logger of the app that opened the connection. */
  get logger(): Logger | undefined {
    return this.#logger;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** `closed` as a function of its own, which a claim setup holds as it is (each settlement asks it). */
  readonly isClosed = (): boolean => this.#closed;

  /**
   * Opens the pool (loading the driver now) and checks the server's version. `routes` are what
   * the broker serves: a first statement that fails is a `Connect` error naming them.
   */
  open(logger: Logger, activity: Activity, routes: ReadonlyMap<string, AnyInboxSpec>): Promise<Database> {
    if (this.#database) return Promise.resolve(this.#database);
    if (this.#closed) return Promise.reject(brokerStopped());
    // Two first uses at once (an app's start, a producer's first publishes) share one pool.
    this.#opening ??= this.#open(logger, activity, routes).finally(() => {
      this.#opening = undefined;
    });
    return this.#opening;
  }

  async #open(logger: Logger, activity: Activity, routes: ReadonlyMap<string, AnyInboxSpec>): Promise<Database> {
    this.#logger = logger;
    const opened = await this.source.open();
    this.#owned = opened.owned;
    this.#poolMax = opened.poolMax;
    this.#listen = opened.listen;
    this.#connections = opened.connections;
    const database = new Database(opened.db, dialectFor(opened.engine), logger, activity);
    let versionRow: RawRow | undefined;
    try {
      versionRow = (await database.execute("schema", database.dialect.schema.serverVersion())).rows[0];
    } catch (error) {
      if (this.#owned) await opened.db.destroy().catch(() => {});
      throw this.#connectFailed(error, routes);
    }
    try {
      this.#serverLabel = database.dialect.checkServerVersion(String(versionRow?.version ?? ""));
      if (versionRow !== undefined && "time_probe" in versionRow) database.readsTimeAsDate = versionRow["time_probe"] instanceof Date;
      const clusterRows: ClusterVariable[] = [];
      for (const query of database.dialect.schema.cluster()) clusterRows.push(...(await database.execute("schema", query)).rows);
      this.#cluster = clusterOf(clusterRows);
    } catch (error) {
      if (this.#owned) await opened.db.destroy();
      throw error;
    }
    this.#database = database;
    const cluster = this.#cluster;
    logger.info(
      { database: this.source.label, server: this.#serverLabel, ...(cluster === undefined ? {} : { cluster: cluster.kind, nodes: cluster.nodes }) },
      "database connected",
    );
    return database;
  }

  /** The first statement failed: a `Connect` error naming the redacted URL, the routes and (with one table) the table. */
  #connectFailed(cause: unknown, served: ReadonlyMap<string, AnyInboxSpec>): SqlInboxError {
    const routes = [...served.keys()];
    const tables = new Set([...served.values()].map((spec) => spec.description.table));
    const place = tables.size === 1 ? { ...(routes.length === 1 ? { route: routes[0] } : {}), table: [...tables][0] } : {};
    return connectFailed(this.source.label, routes, cause, place, this.source.redact);
  }

  /** The open database, or `Closed` (naming the route when given). */
  require(route?: string): Database {
    if (this.#database === undefined) {
      throw brokerNotStarted(route);
    }
    return this.#database;
  }

  /** Whether `listenNotify()` can take a connection of its own (a Postgres broker built from a URL). */
  get canListen(): boolean {
    return this.#listen !== undefined;
  }

  /** Whether a connection listens: publishes then also `NOTIFY` their table's channel. */
  get listening(): boolean {
    return this.#listener !== undefined;
  }

  /**
   * `listenNotify()`: one pool connection listens on the channel of each of `tables`, and `wake`
   * is called with a table's name on its notification. Held until `close()`.
   */
  async listen(tables: readonly ChannelTable[], wake: (table: string, group?: string) => void, logger: Logger): Promise<void> {
    if (this.#listener !== undefined) return;
    const acquire = this.#listen;
    if (acquire === undefined) {
      throw listenNeedsOwnPool(this.source.label);
    }
    const listener = new PgListener(acquire, tables, wake, logger);
    await listener.start();
    this.#listener = listener;
  }

  /**
   * Where processes share the database as a file (SQLite, `capabilities.fileWakes`): a watch of the file
   * calls `wake` when another process commits to it. Nothing for an in-memory database. Held until `close()`.
   */
  async watchFile(wake: () => void, wanted: () => boolean, logger: Logger): Promise<void> {
    const database = this.require();
    if (this.#fileWatch !== undefined || !database.dialect.capabilities.fileWakes) return;
    const file = await databaseFile(database);
    if (file === undefined) return;
    const fileWatch = new FileWatch(database, file, wake, logger, wanted);
    this.#fileWatch = fileWatch;
    await fileWatch.start();
  }

  /** Closes the pool (when the broker opened it); resolves with the connections it held then (0 to a second caller). */
  close(): Promise<number> {
    if (this.#closing !== undefined) return this.#closing.then(() => 0);
    this.#closed = true;
    this.#closing = this.#close();
    return this.#closing;
  }

  async #close(): Promise<number> {
    await this.#opening?.catch(() => {});
    await this.#listener?.stop();
    this.#fileWatch?.stop();
    if (this.#database) await this.#database.idle();
    const connections = this.#owned ? (this.#connections?.() ?? 0) : 0;
    if (this.#database && this.#owned) await this.#database.db.destroy();
    this.#logger?.info({ database: this.source.label, connections }, "database closed");
    return connections;
  }
}
