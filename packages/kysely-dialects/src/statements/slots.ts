import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery } from "kysely";
import type { TableTypes } from "./create-table.js";
import { col, COMPARE_PRECISION, compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";

/** Where one limit's slots are (`FlowStatements`): the queue table's schema and the limit's name. */
export interface SlotPlace {
  readonly schema?: string | undefined;
  readonly name: string;
}

/** Which free rate slots a start may take: at most `take` of the first `max`, whose last start is at or before `freeBefore` (ms). */
export interface RateSlotPick {
  readonly max: number;
  readonly take: number;
  readonly freeBefore: number;
}

/**
 * sqlinbox's own table of slots, where caps and rate limits are counted across processes. One row
 * per slot of one limit (`name`: `rate:<table>:<route>` or `cap:<table>:<route>`), created next to
 * the queue table (in its schema, when it names one).
 *
 * - A rate limit of `max` starts per `perMs` keeps `max` slots, each holding the time of the last
 *   start it admitted (`started_ms`, ms since the epoch). A start takes a slot whose last start is
 *   at least `perMs` old: two starts through one slot are `perMs` apart, so any window of `perMs`
 *   holds at most one start per slot, `max` in all (a sliding-window log of `max` entries).
 * - A cap of `n` rows in work (row-lock form) keeps `n` slots; a claim's transaction locks one per
 *   row (`FOR UPDATE SKIP LOCKED`) and holds it until it commits or rolls back.
 */
export const SLOT_TABLE = "sqlinbox_slots";

/** The slot table as statements name it: in `schema` when given. */
function slotTableRef(schema: string | undefined): string {
  return schema === undefined ? SLOT_TABLE : `${schema}.${SLOT_TABLE}`;
}

/**
 * `CREATE TABLE IF NOT EXISTS sqlinbox_slots`: safe to run from every migration that creates a
 * queue table.
 *
 * ```sql postgres:flow.createSlotTable
 * create table if not exists "sqlinbox_slots" ("name" text not null, "slot" integer not null,
 *   "started_ms" bigint default 0 not null, constraint "sqlinbox_slots_pkey" primary key ("name", "slot"))
 * ```
 */
export function createSlotTableQuery(ctx: StatementContext, types: TableTypes, schema: string | undefined): CompiledQuery {
  return ctx.db.schema
    .createTable(slotTableRef(schema))
    .ifNotExists()
    .addColumn("name", sql.raw(types.indexedText), (c) => c.notNull())
    .addColumn("slot", sql.raw(types.counter), (c) => c.notNull())
    .addColumn("started_ms", sql.raw(types.portable.bigint), (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint(`${SLOT_TABLE}_pkey`, ["name", "slot"])
    .compile();
}

/**
 * Inserts the slots `0 … count - 1` of one limit that are missing, leaving the others as they
 * are (`ON CONFLICT DO NOTHING`; MySQL/MariaDB `ON DUPLICATE KEY UPDATE` a no-op).
 */
export function ensureSlotsQuery(ctx: StatementContext, place: SlotPlace, count: number): CompiledQuery {
  const values = Array.from({ length: count }, (_, slot) => ({ name: place.name, slot, started_ms: 0 }));
  const insert = ctx.db.insertInto(slotTableRef(place.schema)).values(values);
  return ctx.capabilities.insertReturning
    ? insert.onConflict((oc) => oc.columns(["name", "slot"]).doNothing()).compile()
    : insert.onDuplicateKeyUpdate({ slot: (eb: Eb) => eb.ref("slot") }).compile();
}

function freeRateSlots(ctx: StatementContext, place: SlotPlace, pick: RateSlotPick, lock: boolean) {
  const query = ctx.db
    .selectFrom(slotTableRef(place.schema))
    .select("slot")
    .where("name", "=", place.name)
    .where("slot", "<", pick.max)
    .where("started_ms", "<=", pick.freeBefore)
    .orderBy("started_ms")
    .limit(pick.take);
  return lock ? query.forUpdate().skipLocked() : query;
}

/**
 * Takes free rate slots in one statement, stamping them `reserve` (a time past the window, so no
 * other start takes them before the starts they admit are stamped); returns the slots taken. Where
 * the engine has `UPDATE … RETURNING` (MySQL/MariaDB have none: `selectRateSlots` then `stampSlots`
 * in one short transaction).
 *
 * ```sql postgres:flow.takeRateSlots
 * update "sqlinbox_slots" set "started_ms" = $1 where "name" = $2 and "slot" in
 *   (select "slot" from "sqlinbox_slots" where "name" = $3 and "slot" < $4 and "started_ms" <= $5
 *    order by "started_ms" limit $6 for update skip locked) returning "slot"
 * ```
 */
export function takeRateSlotsQuery(ctx: StatementContext, place: SlotPlace, pick: RateSlotPick, reserve: number): CompiledQuery<{ slot: unknown }> {
  const picked = freeRateSlots(ctx, place, pick, ctx.capabilities.rowLock);
  return compiled(ctx.db.updateTable(slotTableRef(place.schema)).set({ started_ms: reserve }).where("name", "=", place.name).where("slot", "in", picked).returning("slot"));
}

/** The free rate slots, locked until the transaction ends (`FOR UPDATE SKIP LOCKED`): the first half of a two-statement take. */
export function selectRateSlotsQuery(ctx: StatementContext, place: SlotPlace, pick: RateSlotPick): CompiledQuery<{ slot: unknown }> {
  return compiled(freeRateSlots(ctx, place, pick, ctx.capabilities.rowLock));
}

/**
 * Stamps slots with `stamp`: a reservation, the time the starts they admitted began, or 0 (a
 * slot taken for a start that did not happen). With `fence`, only slots still stamped `fence`.
 */
export function stampSlotsQuery(ctx: StatementContext, place: SlotPlace, slots: readonly number[], stamp: number, fence?: number): CompiledQuery {
  let query = ctx.db.updateTable(slotTableRef(place.schema)).set({ started_ms: stamp }).where("name", "=", place.name).where("slot", "in", slots);
  if (fence !== undefined) query = query.where("started_ms", "=", fence);
  return query.compile();
}

/**
 * The oldest last start among the first `max` slots: the window frees one slot `perMs` after it.
 *
 * ```sql postgres:flow.oldestStart
 * select min("started_ms") as "oldest" from "sqlinbox_slots" where "name" = $1 and "slot" < $2
 * ```
 */
export function oldestStartQuery(ctx: StatementContext, place: SlotPlace, max: number): CompiledQuery<{ oldest: unknown }> {
  return compiled(
    ctx.db
      .selectFrom(slotTableRef(place.schema))
      .select((eb: Eb) => eb.fn.min("started_ms").as("oldest"))
      .where("name", "=", place.name)
      .where("slot", "<", max),
  );
}

/**
 * The starts a rate limit admitted since `since` (ms), reservations included: what `sqlinbox status` shows.
 *
 * ```sql postgres:flow.startsSince
 * select count(*) as "started" from "sqlinbox_slots" where "name" = $1 and "slot" < $2 and "started_ms" > $3
 * ```
 */
export function startsSinceQuery(ctx: StatementContext, place: SlotPlace, max: number, since: number): CompiledQuery<{ started: unknown }> {
  return compiled(
    ctx.db
      .selectFrom(slotTableRef(place.schema))
      .select((eb: Eb) => eb.fn.countAll().as("started"))
      .where("name", "=", place.name)
      .where("slot", "<", max)
      .where("started_ms", ">", since),
  );
}

/**
 * Locks up to `take` of a cap's first `n` slots for the claim's transaction, passing over those
 * other transactions hold; where the engine has row locks (SQLite has none).
 *
 * ```sql postgres:flow.lockCapSlots
 * select "slot" from "sqlinbox_slots" where "name" = $1 and "slot" < $2 limit $3 for update skip locked
 * ```
 */
export function lockCapSlotsQuery(ctx: StatementContext, place: SlotPlace, n: number, take: number): CompiledQuery<{ slot: unknown }> {
  return compiled(ctx.db.selectFrom(slotTableRef(place.schema)).select("slot").where("name", "=", place.name).where("slot", "<", n).limit(take).forUpdate().skipLocked());
}

/**
 * Waits for one slot of a cap and locks it for the claim's transaction (`FOR UPDATE`, not skipping):
 * a claim that found every slot taken queues behind the transaction holding `slot`, and the lock is
 * handed to it when that transaction ends: by InnoDB before a claim that skips locked slots can take
 * it; by Postgres when the waiter next runs, so such a claim in that instant can take it first.
 *
 * ```sql postgres:flow.waitCapSlot
 * select "slot" from "sqlinbox_slots" where "name" = $1 and "slot" = $2 for update
 * ```
 */
export function waitCapSlotQuery(ctx: StatementContext, place: SlotPlace, slot: number): CompiledQuery<{ slot: unknown }> {
  return compiled(ctx.db.selectFrom(slotTableRef(place.schema)).select("slot").where("name", "=", place.name).where("slot", "=", slot).forUpdate());
}

/**
 * The rows of a lease table in work now: a deadline in the future, not processed, in the
 * subscription's group where the table has one. A cap's claim takes at most `n` minus these.
 *
 * ```sql postgres:flow.countLiveLeases(rich lease)
 * select count(*) as "live" from "jobs" where "jobs"."locked_until" > $1
 *   and "jobs"."processed_at" is null and "jobs"."grp" = $2
 * ```
 */
export function countLiveLeasesQuery(ctx: StatementContext, spec: InboxDescription, options: { readonly now: Date; readonly group?: string }): CompiledQuery<{ live: unknown }> {
  const lease = spec.lease;
  if (lease === undefined) throw new TypeError(`the table "${spec.table}" has no lease column: its rows in work are not counted from the table`);
  let query = ctx.db
    .selectFrom(tableRef(spec))
    .select((eb: Eb) => eb.fn.countAll().as("live"))
    .where(col(spec, lease.name), ">", ctx.time.encode(options.now, COMPARE_PRECISION));
  if (spec.processedAt !== undefined) query = query.where(col(spec, spec.processedAt.name), "is", null);
  if (spec.group !== undefined && options.group !== undefined) query = query.where(col(spec, spec.group.name), "=", options.group);
  return compiled(query);
}
