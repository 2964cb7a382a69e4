import { Activity } from "../activity.js";
import { systemClock, type Clock } from "../clock.js";
import type { Database } from "../drivers/database.js";
import { consoleLogger, type Logger } from "../logger.js";
import type { PublishMiddleware } from "./publish-hooks.js";
import { BrokerConnection, type BrokerSource } from "./connection.js";
import { Publisher, type PublishObserver } from "./publisher.js";
import { RouteTable } from "./route-table.js";
import { WorkflowRegistry } from "../workflow/workflow-registry.js";
import { DatabaseClock, type LeaseClock } from "../time/database-clock.js";

/**
 * What every value of one `SqlBroker` shares: its connection, its route table, and the publisher
 * its publishes go through now. An app that starts the broker binds a publisher carrying the app's
 * publish middleware for its run; otherwise (before, after, or with no app at all) publishes go through the
 * plain publisher, which records nothing. Every publisher of the broker wakes the same subscriptions.
 */
export class BrokerParts {
  readonly connection: BrokerConnection;
  readonly routes: RouteTable;
  /** The workflows this broker runs (`broker.workflow(…)`). */
  readonly workflows = new WorkflowRegistry();
  readonly #plain: Publisher;
  readonly #producerLogger: Logger;
  #bound: Publisher | undefined;
  /** The broker's one clock: the database's time, read by its claims, settlements, publishes, pauses and cancels. */
  #clock: Promise<Clock> | undefined;
  #apps = 0;

  /** `producerLogger`: what the connection logs to when a publish, not an app, opens it (unset: warnings and errors, on the console). */
  constructor(source: BrokerSource, producerLogger: Logger = consoleLogger({ level: "warn" })) {
    this.connection = new BrokerConnection(source);
    this.routes = new RouteTable(this.connection);
    this.#producerLogger = producerLogger;
    this.#plain = new Publisher(
      this.connection,
      this.routes,
      () => this.#openForPublish(),
      () => this.clock(),
    );
  }

  /**
   * The broker's time: the clock the app that runs it started (`startClock`), else, with no app, the
   * database's time read through the host's clock, measured on first need. A publish's `delay`, a
   * pause's and a cancel's "now" (whether a row's lease is live) all read it, as the claims do.
   */
  clock(): Promise<Clock> {
    this.#clock ??= this.#openForPublish().then((database) => this.#databaseClock(database, systemClock, "database", this.connection.logger ?? this.#producerLogger));
    const clock = this.#clock;
    // A failed measure is not kept: the next read measures again.
    return clock.catch((error: unknown) => {
      if (this.#clock === clock) this.#clock = undefined;
      throw error;
    });
  }

  /**
   * An app's start: the broker's clock from now on is the database's, measured through the app's clock
   * `base` (its `leaseClock` says whether the offset is applied), or `base` itself when `leaseClock` is
   * `undefined` (a paused test clock: the only time there is). A failed measure fails the start.
   */
  async startClock(database: Database, base: Clock, leaseClock: LeaseClock | undefined, logger: Logger): Promise<Clock> {
    const clock = leaseClock === undefined ? base : await this.#databaseClock(database, base, leaseClock, logger);
    this.#clock = Promise.resolve(clock);
    return clock;
  }

  #databaseClock(database: Database, base: Clock, leaseClock: LeaseClock, logger: Logger): Promise<DatabaseClock> {
    const place = { database: this.connection.source.label, server: this.connection.serverLabel };
    return DatabaseClock.start({ base, database, logger, place, leaseClock, isClosed: () => this.connection.closed });
  }

  /** A publish with no app: the open connection, else it opens now (a producer's first publish). */
  #openForPublish(): Promise<Database> {
    return this.connection.database !== undefined ? Promise.resolve(this.connection.database) : this.open(this.#producerLogger, new Activity());
  }

  /** The open database, else opened now as a producer's first publish opens it (pause, resume, cancel from any process). */
  database(): Promise<Database> {
    return this.#openForPublish();
  }

  /** An app runs this broker until the returned function is called: `close()` leaves the pool to the app's stop meanwhile. */
  runByApp(): () => void {
    this.#apps++;
    let done = false;
    return () => {
      if (!done) this.#apps--;
      done = true;
    };
  }

  /**
   * A producer's close: ends the pool a publish opened, after the statements in flight. While an
   * app runs the broker it does nothing and resolves `false` (the app's stop closes the pool);
   * otherwise `true`, also when already closed. A closed broker refuses publishes with `Closed`.
   */
  async close(): Promise<boolean> {
    if (this.#apps > 0) return false;
    await this.connection.close();
    return true;
  }

  /** The publisher publishes go through now: the one an app bound, else the plain one. */
  get publisher(): Publisher {
    return this.#bound ?? this.#plain;
  }

  /** Publishes run `middleware` around their inserts and tell `observer` until the returned function is called. */
  bindPublisher(middleware: readonly PublishMiddleware[], observer?: PublishObserver): () => void {
    const bound = this.#plain.boundTo(middleware, observer);
    this.#bound = bound;
    return () => {
      if (this.#bound === bound) this.#bound = undefined;
    };
  }

  /** Opens the connection; a failed first statement names this broker's routes. */
  open(logger: Logger, activity: Activity): Promise<Database> {
    return this.connection.open(logger, activity, this.routes.all);
  }

  /**
   * `listenNotify()`: publishes notify from now on, and one pool connection listens on the channel
   * of every routed table, waking the table's subscriptions in this process on a notification.
   */
  listen(logger: Logger): Promise<void> {
    // The control table's channel too (first: the tables' LISTENs stay the session's last statements): a pause or a
    // cancel in another process is read at once.
    const control = this.connection.require().dialect.control.table;
    return this.connection.listen([control, ...this.routes.tables], (table, group) => this.#plain.wake(table, group), logger);
  }

  /**
   * On a database file that processes share (SQLite): another process's commit wakes every routed
   * table's subscriptions here, and the control table's watch (a pause or a cancel), at once.
   */
  watchFile(logger: Logger): Promise<void> {
    const tables = [this.connection.require().dialect.control.table, ...this.routes.tables].map((t) => (typeof t === "string" ? t : t.table));
    return this.connection.watchFile(
      () => {
        for (const table of tables) this.#plain.wake(table);
      },
      () => this.#plain.anyWaiting(tables),
      logger,
    );
  }
}
