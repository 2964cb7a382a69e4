import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type Expression, type SqlBool } from "kysely";
import { notOnEngine } from "../shared/no-statement.js";
import type { RawRow } from "../types.js";
import type { TableTypes } from "./create-table.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";

/** The table where pauses and cancel requests wait for every process to read them. */
export const CONTROL_TABLE = "sqlinbox_control";

/**
 * A row of the control table: a paused route (`kind` `"pause"`, `target` `""`), a cancel request
 * (`"cancel"`, the row's id as text), a cron tick published (`"cron"`, the tick's time), or a route
 * an app serves (`"route"`, the app's name).
 */
export interface ControlRow {
  readonly kind: string;
  readonly route: string;
  readonly target: string;
}

/**
 * Pause, resume and cancel (every engine): the control table `sqlinbox_control` that every app
 * reads once per poll interval, and the statements that take a row not in work out of its queue.
 */
export interface ControlStatements {
  /** The control table's name. */
  readonly table: string;
  /** `CREATE TABLE IF NOT EXISTS sqlinbox_control (kind, route, target, requested_at)`, keyed by (kind, route, target). */
  create(): CompiledQuery[];
  /** Every pause and cancel request. */
  read(): CompiledQuery<ControlRow>;
  /** Pauses a route: run in one transaction, so a pause given twice leaves one row. */
  pause(route: string, now: Date): CompiledQuery[];
  /** Ends a route's pause. */
  resume(route: string): CompiledQuery;
  /** Records a cancel request for a row (its id as text): run in one transaction. */
  requestCancel(route: string, target: string, now: Date): CompiledQuery[];
  /** Removes a cancel request once it is served. */
  clearCancel(route: string, target: string): CompiledQuery;
  /** Removes cancel requests older than `before`. */
  purgeCancels(before: Date): CompiledQuery;
  /**
   * Marks cron tick `tick` of `route` as published: one row affected, or none (Postgres, SQLite) or a
   * duplicate-key error (MySQL/MariaDB) when a process marked it already. Run in the tick's publish transaction.
   */
  markTick(route: string, tick: Date): CompiledQuery;
  /** Removes the tick marks of `route` before `before`: ticks no process publishes any more. */
  pruneTicks(route: string, before: Date): CompiledQuery;
  /**
   * Records that app `app` serves `routes` (its subscriptions' names) as of `now`: one row each,
   * written or refreshed (`ON CONFLICT DO UPDATE`; MySQL/MariaDB `ON DUPLICATE KEY UPDATE`).
   */
  recordRoutes(routes: readonly string[], app: string, now: Date): CompiledQuery;
  /** Removes the route records older than `before`: routes no running app refreshed. */
  pruneRoutes(before: Date): CompiledQuery;
  /** The routes apps recorded at `since` or later, with the app that recorded each (`target`). */
  readRoutes(since: Date): CompiledQuery<ControlRow>;
  /**
   * Records a cron schedule an app runs (`kind` `"schedule"`, `target` the schedule as JSON: app,
   * pattern, zone) with its next tick as `requested_at`: written or moved (upsert, as `recordRoutes`).
   */
  recordSchedule(route: string, schedule: string, next: Date): CompiledQuery;
  /** Records the last tick of `route` an app published or found published (`kind` `"lastTick"`, `target` `""`). */
  recordLastTick(route: string, tick: Date): CompiledQuery;
  /** Removes the schedule records whose next tick is before `before`: no running app moved them on (last ticks stay). */
  pruneSchedules(before: Date): CompiledQuery;
  /** Every schedule record and last tick: `kind`, `route`, `target`, `requested_at` (the next tick, or the last). */
  readSchedules(): CompiledQuery<ControlRow & { readonly requested_at: unknown }>;
  /** Row lock: locks the row unless a claim holds it (`FOR UPDATE SKIP LOCKED`), where the engine locks rows (`capabilities.rowLock`). */
  lockQueued(spec: InboxDescription, id: unknown): CompiledQuery<{ id: unknown }>;
  /** The row (its id and advisory key columns) unless it is done. */
  findRow(spec: InboxDescription, id: unknown): CompiledQuery<RawRow>;
  /** Deletes the row (or marks it processed) unless it is done or a live lease holds it. */
  removeQueued(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  /** Deletes the row (even on a table with processedAt) unless it is done or a live lease holds it: `removeQueued`'s condition. */
  deleteQueued(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  /**
   * Writes `values` (by column name, already encoded but for a `Date` in the retryAfter or lease
   * column, a time to run at) into the row unless it is done or a live lease holds it, judged at
   * `now` (the database's time): `removeQueued`'s condition. Affects 0 or 1 rows.
   */
  updateQueued(spec: InboxDescription, id: unknown, values: RawRow, now: Date): CompiledQuery;
  /** `lockQueued` for several rows in one statement: of `ids`, those no claim holds, locked. */
  lockQueuedMany(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<{ id: unknown }>;
  /** `findRow` for several rows: those of `ids` that are there and not done. */
  findRows(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow>;
  /** `removeQueued` for several rows in one statement. */
  removeQueuedMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery;
  /** `deleteQueued` for several rows in one statement. */
  deleteQueuedMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery;
  /** `updateQueued` for several rows in one statement: the same values into each. */
  updateQueuedMany(spec: InboxDescription, ids: readonly unknown[], values: RawRow, now: Date): CompiledQuery;
  /** `clearCancel` for several rows of one route in one statement. */
  clearCancels(route: string, targets: readonly string[]): CompiledQuery;
}

/**
 * The control table's statements on one engine. The table is small: one row per paused route
 * (`kind = 'pause'`, `target = ''`), one per cancel request still open (`kind = 'cancel'`,
 * `target` the row's id as text), the recent cron ticks published to a table whose ack deletes
 * the row (`kind = 'cron'`, `target` the tick's time), one per route an app serves (`kind =
 * 'route'`, `target` the app's name, `requested_at` when it last said so), and one per cron
 * schedule an app runs (`kind = 'schedule'`, `requested_at` its next tick) with its last tick
 * (`kind = 'lastTick'`). Every app reads it
 * whole, once per poll interval.
 *
 * ```sql postgres:control.read
 * select "kind", "route", "target" from "sqlinbox_control"
 * ```
 * ```sql postgres:control.recordRoutes
 * insert into "sqlinbox_control" ("kind", "route", "target", "requested_at") values ($1, $2, $3, $4)
 *   on conflict ("kind", "route", "target") do update set "requested_at" = $5
 * ```
 */
export function controlStatements(ctx: StatementContext, types: TableTypes): ControlStatements {
  const db = ctx.db;
  const at = (date: Date) => ctx.time.encode(date, COMPARE_PRECISION);
  // One row per key, its time moved on a second write, on every engine alike.
  const upsert = (kind: string, route: string, target: string, time: Date): CompiledQuery => {
    const insert = db.insertInto(CONTROL_TABLE).values({ kind, route, target, requested_at: at(time) });
    return compiled(
      ctx.capabilities.insertReturning
        ? insert.onConflict((oc) => oc.columns(["kind", "route", "target"]).doUpdateSet({ requested_at: at(time) }))
        : insert.onDuplicateKeyUpdate({ requested_at: at(time) }),
    );
  };
  const statements: ControlStatements = {
    table: CONTROL_TABLE,
    // The three key columns fit one primary key on every engine (MySQL's varchar(255) × 3 stays under its 3072-byte key limit).
    create: (): CompiledQuery[] => [
      db.schema
        .createTable(CONTROL_TABLE)
        .ifNotExists()
        .addColumn("kind", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("route", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("target", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("requested_at", sql.raw(types.time), (c) => c.notNull())
        .addPrimaryKeyConstraint(`${CONTROL_TABLE}_pkey`, ["kind", "route", "target"])
        .compile(),
    ],
    read: (): CompiledQuery<ControlRow> => compiled(db.selectFrom(CONTROL_TABLE).select(["kind", "route", "target"])),
    // Delete then insert, in one transaction: a pause given twice leaves one row, on every engine alike.
    pause: (route: string, now: Date): CompiledQuery[] => [
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "pause").where("route", "=", route)),
      compiled(db.insertInto(CONTROL_TABLE).values({ kind: "pause", route, target: "", requested_at: at(now) })),
    ],
    resume: (route: string): CompiledQuery => compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "pause").where("route", "=", route)),
    requestCancel: (route: string, target: string, now: Date): CompiledQuery[] => [
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cancel").where("route", "=", route).where("target", "=", target)),
      compiled(db.insertInto(CONTROL_TABLE).values({ kind: "cancel", route, target, requested_at: at(now) })),
    ],
    clearCancel: (route: string, target: string): CompiledQuery =>
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cancel").where("route", "=", route).where("target", "=", target)),
    purgeCancels: (before: Date): CompiledQuery => compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cancel").where("requested_at", "<", at(before))),
    // A tick already marked inserts nothing: `ON CONFLICT DO NOTHING`; MySQL/MariaDB a plain insert, its duplicate-key error (1062) meaning held.
    markTick: (route: string, tick: Date): CompiledQuery => {
      const insert = db.insertInto(CONTROL_TABLE).values({ kind: "cron", route, target: tick.toISOString(), requested_at: at(tick) });
      return compiled(ctx.capabilities.insertReturning ? insert.onConflict((oc) => oc.doNothing()) : insert);
    },
    pruneTicks: (route: string, before: Date): CompiledQuery =>
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cron").where("route", "=", route).where("requested_at", "<", at(before))),
    // One row per (route, app): a refresh only moves its time, on every engine alike.
    recordRoutes: (routes: readonly string[], app: string, now: Date): CompiledQuery => {
      const insert = db.insertInto(CONTROL_TABLE).values(routes.map((route) => ({ kind: "route", route, target: app, requested_at: at(now) })));
      return compiled(
        ctx.capabilities.insertReturning
          ? insert.onConflict((oc) => oc.columns(["kind", "route", "target"]).doUpdateSet({ requested_at: at(now) }))
          : insert.onDuplicateKeyUpdate({ requested_at: at(now) }),
      );
    },
    pruneRoutes: (before: Date): CompiledQuery => compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "route").where("requested_at", "<", at(before))),
    readRoutes: (since: Date): CompiledQuery<ControlRow> =>
      compiled(db.selectFrom(CONTROL_TABLE).select(["kind", "route", "target"]).where("kind", "=", "route").where("requested_at", ">=", at(since))),
    recordSchedule: (route: string, schedule: string, next: Date): CompiledQuery => upsert("schedule", route, schedule, next),
    recordLastTick: (route: string, tick: Date): CompiledQuery => upsert("lastTick", route, "", tick),
    pruneSchedules: (before: Date): CompiledQuery => compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "schedule").where("requested_at", "<", at(before))),
    readSchedules: (): CompiledQuery<ControlRow & { readonly requested_at: unknown }> =>
      compiled(db.selectFrom(CONTROL_TABLE).select(["kind", "route", "target", "requested_at"]).where("kind", "in", ["schedule", "lastTick"])),
    lockQueued: (spec: InboxDescription, id: unknown): CompiledQuery<{ id: unknown }> => lock(spec, [id], "control.lockQueued"),
    findRow: (spec: InboxDescription, id: unknown): CompiledQuery<Record<string, unknown>> => find(spec, [id]),
    removeQueued: (spec: InboxDescription, id: unknown, now: Date): CompiledQuery => remove(spec, [id], now),
    deleteQueued: (spec: InboxDescription, id: unknown, now: Date): CompiledQuery => compiled(db.deleteFrom(tableRef(spec)).where(queuedRows(spec, [id], at(now)))),
    updateQueued: (spec: InboxDescription, id: unknown, values: RawRow, now: Date): CompiledQuery => update(spec, [id], values, now),
    lockQueuedMany: (spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<{ id: unknown }> => lock(spec, ids, "control.lockQueuedMany"),
    findRows: (spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<Record<string, unknown>> => find(spec, ids),
    removeQueuedMany: (spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery => remove(spec, ids, now),
    deleteQueuedMany: (spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery => compiled(db.deleteFrom(tableRef(spec)).where(queuedRows(spec, ids, at(now)))),
    updateQueuedMany: (spec: InboxDescription, ids: readonly unknown[], values: RawRow, now: Date): CompiledQuery => update(spec, ids, values, now),
    clearCancels: (route: string, targets: readonly string[]): CompiledQuery =>
      compiled(
        db
          .deleteFrom(CONTROL_TABLE)
          .where("kind", "=", "cancel")
          .where("route", "=", route)
          .where("target", "in", [...targets]),
      ),
  };
  return Object.freeze(statements);

  function lock(spec: InboxDescription, ids: readonly unknown[], name: string): CompiledQuery<{ id: unknown }> {
    return ctx.capabilities.rowLock
      ? compiled(db.selectFrom(tableRef(spec)).select(sql.ref(spec.id.name).as("id")).where(idIn(spec, ids)).forUpdate().skipLocked())
      : notOnEngine(ctx.capabilities.engine, name, "it has no row locks (capabilities.rowLock is false)");
  }

  function find(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<Record<string, unknown>> {
    const keyColumns = (spec.advisoryKey?.parts ?? []).flatMap((p) => ("column" in p ? [p.column.name] : []));
    const columns = [...new Set([spec.id.name, ...keyColumns])];
    let query = db.selectFrom(tableRef(spec)).select(columns).where(idIn(spec, ids));
    if (spec.processedAt !== undefined) query = query.where(spec.processedAt.name, "is", null);
    return compiled(query);
  }

  function remove(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery {
    const notInWork = queuedRows(spec, ids, at(now));
    if (spec.processedAt !== undefined) {
      return compiled(
        db
          .updateTable(tableRef(spec))
          .set({ [spec.processedAt.name]: at(now) })
          .where(notInWork),
      );
    }
    return compiled(db.deleteFrom(tableRef(spec)).where(notInWork));
  }

  function update(spec: InboxDescription, ids: readonly unknown[], values: RawRow, now: Date): CompiledQuery {
    const id = ids.length === 1 ? ids[0] : ids;
    const set: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(values)) {
      const column = spec.columns.find((c) => c.name === name);
      if (column === undefined || column.generated)
        throw new SqlInboxError("Declaration", `an update names "${name}", which is not a writable described column`, { table: spec.table, id });
      set[name] = value instanceof Date && (column.role === "retryAfter" || column.role === "lease") ? at(value) : value;
    }
    if (Object.keys(set).length === 0) throw new SqlInboxError("Declaration", "an update with nothing to change", { table: spec.table, id });
    return compiled(
      db
        .updateTable(tableRef(spec))
        .set(set)
        .where(queuedRows(spec, ids, at(now))),
    );
  }
}

/** The row whose id is the one given (`=`, as a single-row statement always read), or one of several (`in`). */
function idIn(spec: InboxDescription, ids: readonly unknown[]) {
  return (eb: Eb): Expression<SqlBool> => (ids.length === 1 ? eb(spec.id.name, "=", ids[0]) : eb(spec.id.name, "in", [...ids]));
}

/**
 * The rows `ids` unless done (processedAt set) or in work by their lease (a deadline ahead of `now`,
 * encoded): what cancel and update may change. Row locks and advisory keys are judged outside the
 * statement (a `SKIP LOCKED` lock, a tried key) by the caller.
 */
function queuedRows(spec: InboxDescription, ids: readonly unknown[], now: unknown) {
  return (eb: Eb): Expression<SqlBool> => {
    const terms: Expression<SqlBool>[] = [idIn(spec, ids)(eb)];
    if (spec.processedAt !== undefined) terms.push(eb(spec.processedAt.name, "is", null));
    if (spec.lease !== undefined) terms.push(eb.or([eb(spec.lease.name, "is", null), eb(spec.lease.name, "<=", now)]));
    return eb.and(terms);
  };
}
