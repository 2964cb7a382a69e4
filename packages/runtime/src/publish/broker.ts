import { Activity } from "../activity.js";
import { systemClock, type Clock } from "../clock.js";
import type { Database } from "../drivers/database.js";
import type { Logger } from "../logger.js";
import type { PublishTelemetry } from "../telemetry/telemetry.js";
import { BrokerConnection, type BrokerSource } from "./connection.js";
import { Publisher } from "./publisher.js";
import { RouteTable } from "./route-table.js";
import { DatabaseClock } from "../time/database-clock.js";

/**
 * What every value of one `SqlBroker` shares: its connection, its route table, and the publisher
 * its publishes go through now. An app that starts the broker binds a publisher carrying the app's
 * telemetry for its run; otherwise (before, after, or with no app at all) publishes go through the
 * plain publisher, which records nothing. Every publisher of the broker wakes the same subscriptions.
 */
export class BrokerParts {
  readonly connection: BrokerConnection;
  readonly routes: RouteTable;
  readonly #plain: Publisher;
  readonly #producerLogger: Logger;
  #bound: Publisher | undefined;
  #producerClock: Promise<DatabaseClock> | undefined;
  #apps = 0;

  /** `producerLogger`: what the connection logs to when a publish, not an app, opens it. */
  constructor(source: BrokerSource, producerLogger: Logger) {
    this.connection = new BrokerConnection(source);
    this.routes = new RouteTable(this.connection);
    this.#producerLogger = producerLogger;
    this.#plain = new Publisher(
      this.connection,
      this.routes,
      () => this.#openForPublish(),
      () => this.#clockForPublish(),
    );
  }

  /** A publish with no app reads the database's time through the system clock, measured on first need. */
  #clockForPublish(): Promise<Clock> {
    this.#producerClock ??= this.#openForPublish().then((database) =>
      DatabaseClock.start({
        base: systemClock,
        database,
        logger: this.connection.logger ?? this.#producerLogger,
        place: { database: this.connection.source.label, server: this.connection.serverLabel },
        leaseClock: "database",
        isClosed: () => this.connection.closed,
      }),
    );
    // A failed measure is not kept: the next publish that needs the time measures again.
    return this.#producerClock.catch((error: unknown) => {
      this.#producerClock = undefined;
      throw error;
    });
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

  /** Publishes record their spans with `telemetry` (none: `undefined`) and read time on the app's `clock` until the returned function is called. */
  bindPublisher(telemetry: PublishTelemetry | undefined, clock: Clock): () => void {
    const bound = this.#plain.boundTo(telemetry, clock);
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
    return this.connection.listen([control, ...this.routes.tables], (table) => this.#plain.wake(table), logger);
  }
}
