import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { QueryResult, Transaction } from "kysely";
import type { AnyKysely, Database } from "../drivers/database.js";
import { closedBeforePublish, noRoute } from "../errors.js";
import { errorFields } from "../logger.js";
import type { PublishTelemetry } from "../telemetry/telemetry.js";
import type { BrokerConnection } from "./connection.js";
import { channelOf } from "./listen.js";
import { chunkRows, publishedRows, type MessageHeaderValues } from "./publish-rows.js";
import type { RouteTable } from "./route-table.js";
import { Wakes } from "./wakes.js";

/**
 * Publishes to one broker's routes: the insert, the `NOTIFY` while its connection listens, and the
 * wake of this process's subscriptions. Its telemetry is fixed when it is built: `withTelemetry`
 * gives a publisher of the same broker (same routes, same wakes) that records publish spans.
 */
export class Publisher {
  readonly #connection: BrokerConnection;
  readonly #routes: RouteTable;
  readonly #wakes: Wakes;
  readonly #telemetry: PublishTelemetry | undefined;
  readonly #open: () => Promise<Database>;

  /** `open`: the broker's database, opened on a first publish when no app opened it. */
  constructor(connection: BrokerConnection, routes: RouteTable, open: () => Promise<Database>, telemetry?: PublishTelemetry, wakes = new Wakes()) {
    this.#connection = connection;
    this.#routes = routes;
    this.#open = open;
    this.#telemetry = telemetry;
    this.#wakes = wakes;
  }

  /** This broker's publisher recording publish spans with `telemetry` (none: `undefined`); both wake the same subscriptions. */
  withTelemetry(telemetry: PublishTelemetry | undefined): Publisher {
    return new Publisher(this.#connection, this.#routes, this.#open, telemetry, this.#wakes);
  }

  /** Registers a subscription's wake-up for publishes to `table`. */
  onPublish(table: string, wake: () => void): () => void {
    return this.#wakes.add(table, wake);
  }

  /** Wakes this process's subscriptions of `table` (a notification from another process). */
  wake(table: string): void {
    this.#wakes.wake(table);
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
    const spec = this.#routes.route(name);
    if (spec === undefined) throw noRoute(name, this.#routes.all);
    const description = spec.description;
    if (this.#connection.closed) throw closedBeforePublish({ subscription: name, table: description.table });
    const database = await this.#open();
    const on = via as AnyKysely | undefined;
    const table = await this.#routes.table(description, on);
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
    const trace = this.#telemetry?.begin(name, description, first);
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
    this.#wakes.wakeAfterCommit(description.table, on);
    return ids;
  }

  /**
   * On the same connection or transaction as the insert: inside `{ via: trx }` the notification goes out at commit.
   * Without `via` the rows are already committed: a failed NOTIFY is only a warning (the next poll sees them).
   */
  async #notify(name: string, description: InboxDescription, via: AnyKysely | undefined): Promise<void> {
    if (!this.#connection.listening) return;
    const database = this.#connection.require(name);
    if (database.dialect.notify === null) return;
    const notify = database.execute("publish", database.dialect.notify.notify(channelOf(description)), via);
    if (via !== undefined) return void (await notify);
    await notify.catch((error: unknown) =>
      this.#connection.logger?.warn(
        { ...errorFields(error), subscription: name, table: description.table },
        "listenNotify: NOTIFY failed after the publish committed; other processes see the row at their next poll",
      ),
    );
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
