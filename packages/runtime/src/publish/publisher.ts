import { isSqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { Transaction } from "kysely";
import type { Clock } from "../clock.js";
import type { AnyKysely, Database } from "../drivers/database.js";
import { closedBeforePublish, noRoute, publishOutcomeUnknown } from "../errors.js";
import { errorFields } from "../logger.js";
import type { BrokerConnection } from "./connection.js";
import { channelOf } from "@sqlinbox/kysely-dialects/internal";
import type { OutgoingPublish, PublishedRow, PublishMiddleware } from "./publish-hooks.js";
import { insertedIds, insertKeyed, replaceHeld, type Inserted, type PublishDatabase } from "./keyed-insert.js";
import { chunkRows, publishedRows, type RowOptions } from "./publish-rows.js";
import type { RouteTable } from "./route-table.js";
import { type Wake, Wakes } from "./wakes.js";

/** What a publish that went through tells an observer (`TestApp`'s log): the call, and each row's outcome. */
export interface PublishEvent {
  readonly route: string;
  readonly payloads: readonly unknown[];
  readonly options: RowOptions;
  readonly published: readonly Published[];
  /** The caller's transaction or Kysely instance (`{ via }`), whose commit makes the rows real. */
  readonly via: AnyKysely | undefined;
}

/**
 * Told of every publish that went through (an app started by `TestApp` passes one). `publishing`, when
 * present, is told as a publish begins its insert, and the function it returns once that publish has
 * ended (told, or failed): the app's job events hold a `started` behind it, so `published` comes first.
 */
export type PublishObserver = ((event: PublishEvent) => void) & { readonly publishing?: () => () => void };

/**
 * Publishes to one broker's routes: the insert, the `NOTIFY` (asked for by `listenNotify()`), and the
 * wake of this process's subscriptions. Its publish middleware is fixed when it is built: `boundTo`
 * gives a publisher of the same broker (same routes, same wakes) that runs a started app's
 * (`app.usePublish`, OpenTelemetry's among them) and tells the app's publish observer, when it has one.
 */
export class Publisher {
  readonly #connection: BrokerConnection;
  readonly #routes: RouteTable;
  readonly #wakes: Wakes;
  /** Outermost first; empty: a publish pays nothing for the feature. */
  readonly #middleware: readonly PublishMiddleware[];
  readonly #open: () => Promise<Database>;
  readonly #clock: () => Promise<Clock>;
  readonly #observer: PublishObserver | undefined;

  /**
   * `open`: the broker's database, opened on a first publish when no app opened it. `clock`: the
   * database's time, read for a `delay` and for `replace` (whether a row's lease runs past now).
   */
  constructor(
    connection: BrokerConnection,
    routes: RouteTable,
    open: () => Promise<Database>,
    clock: () => Promise<Clock>,
    middleware: readonly PublishMiddleware[] = [],
    wakes = new Wakes(),
    observer?: PublishObserver,
  ) {
    this.#connection = connection;
    this.#observer = observer;
    this.#routes = routes;
    this.#open = open;
    this.#clock = clock;
    this.#middleware = middleware;
    this.#wakes = wakes;
  }

  /** This broker's publisher running `middleware` around each publish and telling `observer`; both read the broker's clock and wake the same subscriptions. */
  boundTo(middleware: readonly PublishMiddleware[], observer?: PublishObserver): Publisher {
    return new Publisher(this.#connection, this.#routes, this.#open, this.#clock, middleware, this.#wakes, observer);
  }

  /** Registers a subscription's wake-up for publishes to `table` (to `group` alone, for a group's subscription; with a due time for a run-at). */
  onPublish(table: string, wake: Wake, group?: string, waiting?: () => boolean): () => void {
    return this.#wakes.add(table, wake, group, waiting);
  }

  /** Whether a subscription of one of `tables` in this process waits for work now. */
  anyWaiting(tables: readonly string[]): boolean {
    return this.#wakes.anyWaiting(tables);
  }

  /** Wakes this process's subscriptions of `table` (of `group` alone, when given): a notification from another process. */
  wake(table: string, group?: string): void {
    this.#wakes.wake(table, undefined, group);
  }

  /** One row: `publishMany` with one payload. */
  async publish(name: string, payload: unknown, via: AnyKysely | Transaction<unknown> | undefined, options: RowOptions = {}, notify = false): Promise<Published> {
    const [published] = await this.publishMany(name, [payload], via, options, notify);
    return published as Published;
  }

  /**
   * Inserts one row per payload into the table route `name` goes to: one multi-row insert per chunk
   * of rows that fits the engine's parameter limit, all inside `via` when given (else inside one
   * transaction of their own when there is more than one chunk), then one NOTIFY and one wake.
   * Resolves to one `{ id, created }` per payload, in order: the new id where the engine can tell it
   * (RETURNING, or MySQL's consecutive insertId); a row whose dedup key a row already holds is not
   * inserted and gets that row's id with `created: false`. `notify`: the broker value published on
   * has `listenNotify()`, so the publish notifies even when no app of this process listens (a producer).
   *
   * A failure after a statement may have reached the server (the connection lost during an insert or
   * the commit, or after an earlier statement of this publish committed) is `OutcomeUnknown`; any
   * other failure wrote nothing (inside the caller's `via` transaction, its commit decides). A publish
   * whose every row has a key, outside a transaction, on a table that keeps handled rows (processedAt),
   * runs once more on a fresh connection when its outcome is unknown: the keys make that safe, and a
   * row the lost attempt wrote answers `created: false`.
   */
  async publishMany(name: string, payloads: readonly unknown[], via: AnyKysely | Transaction<unknown> | undefined, options: RowOptions = {}, notify = false): Promise<Published[]> {
    try {
      return await this.#publishMany(name, payloads, via, options, notify);
    } catch (error) {
      if (!isSqlInboxError(error, "OutcomeUnknown") || !this.#retriesItself(name, payloads, via, options)) throw error;
      // Once: a second unknown outcome (or a refusal now) leaves the first one unknown.
      const published = await this.#publishMany(name, payloads, via, options, notify).catch(() => {
        throw error;
      });
      // Rows the lost attempt wrote answer created: false now, and nothing woke for them yet.
      const description = this.#routes.route(name)?.description;
      if (description !== undefined && !published.some((p) => p.created)) await this.#announce(name, description, via as AnyKysely | undefined, notify, undefined);
      return published;
    }
  }

  /** Whether a publish whose outcome is unknown may run again by itself: every row keyed, no transaction, handled rows kept. */
  #retriesItself(name: string, payloads: readonly unknown[], via: AnyKysely | Transaction<unknown> | undefined, options: RowOptions): boolean {
    const description = this.#routes.route(name)?.description;
    const keys = options.keys ?? [];
    const inTransaction = via !== undefined && (via as { isTransaction?: boolean }).isTransaction === true;
    return description?.processedAt !== undefined && !inTransaction && keys.length === payloads.length && keys.every((k) => k !== undefined);
  }

  async #publishMany(name: string, payloads: readonly unknown[], via: AnyKysely | Transaction<unknown> | undefined, options: RowOptions, notify: boolean): Promise<Published[]> {
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
    // What may be in the table if this fails: a statement outside a transaction that completed committed.
    const attempt = { committed: false, committing: false, started: false };
    const tracked: PublishDatabase = {
      dialect: database.dialect,
      execute: async (kind, query, target) => {
        const result = await database.execute(kind, query, target);
        if (target === undefined || (target as { isTransaction?: boolean }).isTransaction !== true) attempt.committed = true;
        return result;
      },
    };
    const insertAll = async (target: AnyKysely | undefined): Promise<Inserted[]> => {
      if (keyed) {
        const outcome = await insertKeyed(tracked, description, name, rows, target, options.inGivenOrder === true);
        return options.replace === true && now !== undefined ? replaceHeld(tracked, description, rows, outcome, target, now) : outcome;
      }
      const published: Inserted[] = [];
      for (const chunk of chunks) {
        const result = await tracked.execute("publish", database.dialect.publish.insert(description, chunk), target);
        for (const id of insertedIds(description, chunk, result)) published.push({ id, created: true });
      }
      return published;
    };
    const chunks = chunkRows(rows, database.dialect.capabilities.maxParameters);
    // More than one insert commits together, but keyed rows inserted one per statement (MySQL/MariaDB): each
    // commits alone there, as a transaction holding some keys while it waits for others' could deadlock another publisher.
    const onePerStatement = keyed && !database.dialect.capabilities.insertReturning;
    const ownTransaction = on === undefined && (onePerStatement ? options.oneTransaction === true && rows.length > 1 : chunks.length > 1);
    const insert = (): Promise<Inserted[]> => {
      attempt.started = true;
      return ownTransaction
        ? database.db.transaction().execute(async (trx) => {
            const inserted = await insertAll(trx);
            attempt.committing = true;
            return inserted;
          })
        : insertAll(on);
    };
    let published: Inserted[];
    let out: Published[];
    // Outside a transaction, a claim on another connection may take a committed row before this insert's
    // reply is read: the observer holds that row's `started` until this publish was told (or failed).
    // Inside one, the row is seen at the caller's commit, after it was told.
    const ended = (on as { isTransaction?: boolean } | undefined)?.isTransaction === true ? undefined : this.#observer?.publishing?.();
    try {
      try {
        published = this.#middleware.length === 0 ? await insert() : ((await this.#around(name, description, rows, options, insert)) as Inserted[]);
      } catch (error) {
        // A publish middleware failed before the insert began: nothing was written.
        if (!attempt.started) throw error;
        const inTransaction = on !== undefined && (on as { isTransaction?: boolean }).isTransaction === true;
        // Unknown: a statement of this publish committed already, or the last one (or the commit) may have reached the server.
        const unknown = attempt.committed || (!inTransaction && !isSqlInboxError(error) && (!ownTransaction || attempt.committing) && !database.dialect.wroteNothing(error));
        if (unknown) throw publishOutcomeUnknown(rows.length, keyed, error, { route: name, table: description.table });
        throw error;
      }
      out = published.map(publishedOf);
      // Told before the wake and the NOTIFY: a subscription they wake starts the row after its `published`, never before.
      this.#observer?.({ route: name, payloads, options, published: out, via: on });
    } finally {
      ended?.();
    }
    if (published.some((p) => p.created || p.replaced === true)) await this.#announce(name, description, on, notify, runAt?.getTime());
    return out;
  }

  /**
   * The insert with the publish middleware around it, outermost first; the headers the middleware
   * leave when the innermost calls `next()` are written into every row (they share the call's headers).
   */
  #around(name: string, description: InboxDescription, rows: RawRow[], options: RowOptions, insert: () => Promise<Inserted[]>): Promise<readonly PublishedRow[]> {
    const column = description.headers?.name;
    const publish: OutgoingPublish = { route: name, table: description.table, rows: rows.length, headers: column === undefined ? undefined : { ...options.headers } };
    const chain = this.#middleware;
    const run = (i: number): Promise<readonly PublishedRow[]> => {
      const middleware = chain[i];
      if (middleware !== undefined) return middleware(publish, () => run(i + 1));
      const added = publish.headers;
      if (column !== undefined && added !== undefined && Object.keys(added).length > 0) {
        const own = options.rowHeaders;
        if (own === undefined) {
          const text = JSON.stringify(added);
          for (const row of rows) row[column] = text;
        } else {
          // Each row's own headers, with the middleware's merged over them (as one row's publish does with its call's).
          rows.forEach((row, i) => {
            row[column] = JSON.stringify({ ...own[i], ...added });
          });
        }
      }
      return insert();
    };
    return run(0);
  }

  /**
   * Rows were written: the NOTIFY (when asked for) and the wake of this process's subscriptions (at `dueAt`, when
   * given); on a table with a group column both name the group, the published name, which only its subscriptions heed.
   */
  async #announce(name: string, description: InboxDescription, on: AnyKysely | undefined, notify: boolean, dueAt: number | undefined): Promise<void> {
    const group = description.group === undefined ? undefined : name;
    if (notify || this.#connection.listening) await this.#notify(name, description, on, group);
    this.#wakes.wakeAfterCommit(description.table, on, dueAt, group);
  }

  /**
   * On the same connection or transaction as the insert: inside `{ via: trx }` the notification goes out at commit.
   * Without `via` the rows are already committed: a failed NOTIFY is only a warning (the next poll sees them).
   */
  async #notify(name: string, description: InboxDescription, via: AnyKysely | undefined, group: string | undefined): Promise<void> {
    const database = this.#connection.require(name);
    if (!database.dialect.capabilities.listenNotify) return;
    const notify = database.execute("publish", database.dialect.notify.notify(channelOf(description), group), via);
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
  /**
   * The row's id as text, on every engine: an integer id's decimal digits (a `BIGINT` passes 2^53, where a
   * number loses digits), a text or uuid id as it is, a binary id in hex, a time id in ISO 8601. `broker.cancel`
   * takes it as it is; a handler's `ctx.id` is the value the driver read (compare with `String(ctx.id)`).
   */
  readonly id: string;
  readonly created: boolean;
  /** With `replace`: whether the row holding the key took this publish's values (`false`: it was in work, left alone). */
  readonly replaced?: boolean;
}

/** What a publish answers for an inserted row (built field by field: a spread per row costs a bulk publish). */
function publishedOf(p: Inserted): Published {
  return p.replaced === undefined ? { id: idText(p.id), created: p.created } : { id: idText(p.id), created: p.created, replaced: p.replaced };
}

/** An id as `Published.id` gives it: text, whatever the column and the driver. */
function idText(id: unknown): string {
  if (typeof id === "string") return id;
  if (id instanceof Uint8Array) return Buffer.from(id).toString("hex");
  if (id instanceof Date) return id.toISOString();
  return String(id);
}
