import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { QueryResult, Transaction } from "kysely";
import type { Clock } from "../clock.js";
import { isDuplicateKey, type AnyKysely, type Database } from "../drivers/database.js";
import { closedBeforePublish, noRoute, publishOptionWithoutColumn } from "../errors.js";
import { errorFields } from "../logger.js";
import type { PublishTelemetry } from "../telemetry/telemetry.js";
import type { BrokerConnection } from "./connection.js";
import { channelOf } from "./listen.js";
import { chunkRows, publishedRows, type RowOptions } from "./publish-rows.js";
import type { RouteTable } from "./route-table.js";
import { type Wake, Wakes } from "./wakes.js";

/**
 * Publishes to one broker's routes: the insert, the `NOTIFY` while its connection listens, and the
 * wake of this process's subscriptions. Its telemetry is fixed when it is built: `boundTo`
 * gives a publisher of the same broker (same routes, same wakes) that records publish spans.
 */
export class Publisher {
  readonly #connection: BrokerConnection;
  readonly #routes: RouteTable;
  readonly #wakes: Wakes;
  readonly #telemetry: PublishTelemetry | undefined;
  readonly #open: () => Promise<Database>;
  readonly #clock: () => Promise<Clock>;

  /**
   * `open`: the broker's database, opened on a first publish when no app opened it. `clock`: the
   * database's time, read for a `delay` and for `replace` (whether a row's lease runs past now).
   */
  constructor(connection: BrokerConnection, routes: RouteTable, open: () => Promise<Database>, clock: () => Promise<Clock>, telemetry?: PublishTelemetry, wakes = new Wakes()) {
    this.#connection = connection;
    this.#routes = routes;
    this.#open = open;
    this.#clock = clock;
    this.#telemetry = telemetry;
    this.#wakes = wakes;
  }

  /** This broker's publisher recording publish spans with `telemetry` (none: `undefined`) and reading time on `clock` (an app's); both wake the same subscriptions. */
  boundTo(telemetry: PublishTelemetry | undefined, clock: Clock): Publisher {
    return new Publisher(this.#connection, this.#routes, this.#open, () => Promise.resolve(clock), telemetry, this.#wakes);
  }

  /** Registers a subscription's wake-up for publishes to `table` (with a due time for a run-at). */
  onPublish(table: string, wake: Wake): () => void {
    return this.#wakes.add(table, wake);
  }

  /** Wakes this process's subscriptions of `table` (a notification from another process). */
  wake(table: string): void {
    this.#wakes.wake(table);
  }

  /** One row: `publishMany` with one payload. */
  async publish(name: string, payload: unknown, via: AnyKysely | Transaction<unknown> | undefined, options: RowOptions = {}): Promise<Published> {
    const [published] = await this.publishMany(name, [payload], via, options);
    return published as Published;
  }

  /**
   * Inserts one row per payload into the table route `name` goes to: one multi-row insert per chunk
   * of rows that fits the engine's parameter limit, all inside `via` when given (else inside one
   * transaction of their own when there is more than one chunk), then one NOTIFY and one wake.
   * Resolves to one `{ id, created }` per payload, in order: the new id where the engine can tell it
   * (RETURNING, or MySQL's consecutive insertId); a row whose dedup key a row already holds is not
   * inserted and gets that row's id with `created: false`.
   */
  async publishMany(name: string, payloads: readonly unknown[], via: AnyKysely | Transaction<unknown> | undefined, options: RowOptions = {}): Promise<Published[]> {
    const spec = this.#routes.route(name);
    if (spec === undefined) throw noRoute(name, this.#routes.all);
    const description = spec.description;
    if (this.#connection.closed) throw closedBeforePublish({ route: name, table: description.table });
    const database = await this.#open();
    const on = via as AnyKysely | undefined;
    const table = await this.#routes.table(description, on);
    const now = options.delay !== undefined || options.replace === true ? (await this.#clock()).now() : undefined;
    const runAt = options.runAt ?? (options.delay === undefined || now === undefined ? undefined : new Date(now.getTime() + options.delay));
    const rows = publishedRows(description, name, payloads, table.storage, { ...options, runAt });
    if (rows.length === 0) return [];
    const keyed = description.key !== undefined && options.keys?.some((k) => k !== undefined) === true;
    const insertAll = async (target: AnyKysely | undefined): Promise<Published[]> => {
      if (keyed) {
        const outcome = await insertKeyed(database, description, name, rows, target);
        return options.replace === true && now !== undefined ? replaceHeld(database, description, rows, outcome, target, now) : outcome;
      }
      const published: Published[] = [];
      for (const chunk of chunks) {
        const result = await database.execute("publish", database.dialect.publish.insert(description, chunk), target);
        for (const id of insertedIds(description, chunk, result)) published.push({ id, created: true });
      }
      return published;
    };
    // One publish span per call; its traceparent goes into every row's headers (they share the call's headers).
    const first = rows[0] as RawRow;
    const trace = this.#telemetry?.begin(name, description, first);
    if (trace !== undefined && description.headers !== undefined) for (const row of rows) row[description.headers.name] = first[description.headers.name];
    const chunks = chunkRows(rows, database.dialect.capabilities.maxParameters);
    let published: Published[];
    try {
      // More than one insert commits together, but keyed rows inserted one per statement (MySQL/MariaDB): each
      // commits alone there, as a transaction holding some keys while it waits for others' could deadlock another publisher.
      const onePerStatement = keyed && !database.dialect.capabilities.insertReturning;
      const ownTransaction = on === undefined && chunks.length > 1 && !onePerStatement;
      published = ownTransaction ? await database.db.transaction().execute((trx) => insertAll(trx)) : await insertAll(on);
      trace?.end(undefined, published.length === 1 ? published[0]?.id : undefined);
    } catch (error) {
      trace?.end(error, undefined);
      throw error;
    }
    if (published.some((p) => p.created || p.replaced === true)) {
      await this.#notify(name, description, on);
      this.#wakes.wakeAfterCommit(description.table, on, runAt?.getTime());
    }
    return published;
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

/** What a publish resolves to for each payload: the row's id, and whether this publish inserted it (`false`: its dedup key was held). */
export interface Published {
  readonly id: unknown;
  readonly created: boolean;
  /** With `replace`: whether the row holding the key took this publish's values (`false`: it was in work, left alone). */
  readonly replaced?: boolean;
}

/**
 * `replace`: each row whose key was held updates the holding row unless that row is in work (its
 * lease runs past now), in order, so the last payload of a key wins. One UPDATE per row, fenced by
 * the lease column: a claim stamping it meanwhile holds the row lock, and exactly one of the two wins.
 */
async function replaceHeld(
  database: Database,
  spec: InboxDescription,
  rows: readonly RawRow[],
  outcome: readonly Published[],
  target: AnyKysely | undefined,
  now: Date,
): Promise<Published[]> {
  const out: Published[] = [];
  for (const [i, published] of outcome.entries()) {
    if (published.created) {
      out.push(published);
      continue;
    }
    const result = await database.execute("publish", database.dialect.publish.replaceKeyed(spec, rows[i] as RawRow, now), target);
    out.push({ ...published, replaced: (result.numAffectedRows ?? 0n) > 0n });
  }
  return out;
}

/** How often a keyed row is tried again when the row holding its key went away (acked) between the insert and the read. */
const KEY_RETRIES = 5;

/**
 * Inserts rows of which some carry a dedup key, in key order (two publishers of the same keys
 * take them in the same order, so they never wait on each other in a circle). Where the engine
 * has RETURNING, one `ON CONFLICT (key) DO NOTHING` insert per chunk, then one read of the ids
 * of the keys it skipped; on MySQL/MariaDB one plain insert per row, a duplicate-key error (1062)
 * meaning the key is held, then a locking read of its id. A key whose row went away between the
 * two (acked meanwhile) is inserted again. No read before a write: the unique index decides.
 */
async function insertKeyed(database: Database, spec: InboxDescription, route: string, rows: readonly RawRow[], target: AnyKysely | undefined): Promise<Published[]> {
  const keyColumn = (spec.key as NonNullable<InboxDescription["key"]>).name;
  const keyOf = (row: RawRow): string | undefined => row[keyColumn] as string | undefined;
  const out: Array<Published | undefined> = rows.map(() => undefined);
  const order = rows.map((_, i) => i).sort((a, b) => compareKeys(keyOf(rows[a] as RawRow), keyOf(rows[b] as RawRow)));
  // The first row of each key in this call is the one that may insert it; later ones take its outcome.
  const firstOfKey = new Map<string, number>();
  const pending: number[] = [];
  for (const i of order) {
    const key = keyOf(rows[i] as RawRow);
    if (key === undefined || !firstOfKey.has(key)) pending.push(i);
    if (key !== undefined && !firstOfKey.has(key)) firstOfKey.set(key, i);
  }
  const publish = database.dialect.publish;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > KEY_RETRIES) throw publishOptionWithoutColumn(route, spec.table, "a keyed publish kept finding its key held by a row that then went away: try again");
    const missing: number[] = [];
    if (database.dialect.capabilities.insertReturning) {
      let start = 0;
      for (const part of chunkRows(
        pending.map((i) => rows[i] as RawRow),
        database.dialect.capabilities.maxParameters,
      )) {
        const chunk = pending.slice(start, start + part.length);
        start += part.length;
        const query = publish.insertKeyed(spec, part) as NonNullable<ReturnType<typeof publish.insertKeyed>>;
        const inserted = (await database.execute("publish", query, target)).rows;
        const byKey = new Map<string, unknown>();
        const unkeyedIds: unknown[] = [];
        for (const r of inserted) {
          const key = r[keyColumn];
          if (key === null || key === undefined) unkeyedIds.push(r[spec.id.name]);
          else byKey.set(String(key), r[spec.id.name]);
        }
        for (const i of chunk) {
          const key = keyOf(rows[i] as RawRow);
          if (key === undefined) out[i] = { id: unkeyedIds.shift(), created: true };
          else if (byKey.has(key)) out[i] = { id: byKey.get(key), created: true };
          else missing.push(i);
        }
      }
    } else {
      for (const i of pending) {
        const row = rows[i] as RawRow;
        try {
          const result = await database.execute("publish", publish.insert(spec, [row]), target);
          out[i] = { id: insertedIds(spec, [row], result)[0], created: true };
        } catch (error) {
          if (!isDuplicateKey(error) || keyOf(row) === undefined) throw error;
          missing.push(i);
        }
      }
    }
    pending.length = 0;
    if (missing.length === 0) break;
    const held = (await database.execute("publish", publish.keyedRows(spec, [...new Set(missing.map((i) => keyOf(rows[i] as RawRow) as string))]), target)).rows;
    const heldIds = new Map(held.map((r) => [String(r[keyColumn]), r[spec.id.name]]));
    for (const i of missing) {
      const key = keyOf(rows[i] as RawRow) as string;
      if (heldIds.has(key)) out[i] = { id: heldIds.get(key), created: false };
      else pending.push(i);
    }
  }
  // Later rows of a key take the first row's id: this call inserted it at most once.
  return rows.map((row, i) => {
    const key = keyOf(row);
    const first = key === undefined ? i : (firstOfKey.get(key) as number);
    const outcome = out[first] as Published;
    return first === i ? outcome : { id: outcome.id, created: false };
  });
}

function compareKeys(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a < b ? -1 : 1;
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
