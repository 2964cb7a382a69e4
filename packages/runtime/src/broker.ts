import type { AnyInboxSpec, InboxDescription, SqlInboxError } from "@sqlinbox/core/internal";
import { checkSchema, dialectFor, type Engine, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { Transaction } from "kysely";
import type { Activity } from "./activity.js";
import { Database, type AnyKysely } from "./database.js";
import type { OpenedDatabase } from "./drivers/index.js";
import type { ListenClient } from "./drivers/types.js";
import { channelOf, PgListener } from "./listen.js";
import { brokerNotStarted, brokerStopped, closedBeforePublish, connectFailed, listenNeedsOwnPool, noRoute } from "./errors.js";
import { errorFields, type Logger } from "./logger.js";
import { encodePayload, payloadStorageOf, type PayloadStorage } from "./payload.js";
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
}

/** The state one broker and every value derived from it share: routes, and the connection once started. */
export class BrokerState {
  readonly source: BrokerSource;
  readonly routes = new Map<string, AnyInboxSpec>();
  readonly #tables = new Map<string, Promise<TableRuntime>>();
  readonly #wakers = new Map<string, Set<() => void>>();
  database: Database | undefined;
  poolMax = Infinity;
  serverLabel = "";
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
    } catch (error) {
      if (this.#owned) await opened.db.destroy();
      throw error;
    }
    this.database = database;
    logger.info({ database: this.source.label, server: this.serverLabel }, "database connected");
    return database;
  }

  /** The first statement failed: a `Connect` error naming the redacted URL, the routes and (with one table) the table. */
  #connectFailed(cause: unknown): SqlInboxError {
    const routes = [...this.routes.keys()];
    const tables = new Set([...this.routes.values()].map((spec) => spec.description.table));
    const place = tables.size === 1 ? { ...(routes.length === 1 ? { subscription: routes[0] } : {}), table: [...tables][0] } : {};
    return connectFailed(this.source.label, routes, cause, place);
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
      throw listenNeedsOwnPool(this.source.label);
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
    if (this.#closed) throw closedBeforePublish({ subscription: name, table: description.table });
    const database = this.#require(name);
    const table = await this.table(description);
    const row: RawRow = {};
    if (description.payload !== undefined) {
      row[description.payload.name] = encodePayload(payload, table.storage, { subscription: name, table: description.table });
    } else {
      const values = (payload ?? {}) as Record<string, unknown>;
      for (const col of description.columns) if (!col.generated && col.key in values) row[col.name] = values[col.key];
    }
    if (description.group !== undefined) row[description.group.name] = name;
    const trace = this.publishTelemetry?.begin(name, description, row);
    try {
      const inserted = await database.execute("publish", database.dialect.publish.insert(description, [row]), via as AnyKysely | undefined);
      trace?.end(undefined, inserted.rows[0]?.[description.id.name] ?? inserted.insertId);
    } catch (error) {
      trace?.end(error, undefined);
      throw error;
    }
    // On the same connection or transaction as the insert: inside `{ via: trx }` the notification goes out at commit.
    // Without `via` the row is already committed: a failed NOTIFY is only a warning (the next poll sees the row).
    if (this.notifying && database.dialect.notify !== null) {
      const notify = database.execute("publish", database.dialect.notify.notify(channelOf(description.table)), via as AnyKysely | undefined);
      if (via !== undefined) await notify;
      else
        await notify.catch((error: unknown) =>
          this.#logger?.warn(
            { ...errorFields(error), subscription: name, table: description.table },
            "listenNotify: NOTIFY failed after the publish committed; other processes see the row at their next poll",
          ),
        );
    }
    this.#wakeTable(description.table);
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
