import type { InboxDescription } from "@sqlinbox/core/internal";
import { channelOf, type EngineDialect } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import type { AnyKysely } from "../drivers/types.js";
import { removeUnlessInWork, writeUnlessInWork, type ProcessKeys } from "./remove-unless-in-work.js";

/** What `cancel` did: the row will never start, its handler was told to stop, or there is no such row (or it is done). */
export type CancelResult = "removed" | "signalled" | "not found";

/** How long a cancel request waits for a process to serve it before a later cancel clears it away. */
export const CANCEL_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

/** Apps refresh the record of the routes they serve once an hour: a record this old is no running app's, and is pruned. */
export const ROUTE_RECORD_KEPT_MS = 24 * 60 * 60 * 1000;

/** A pause of `route` applies to a subscription of that name, or of a name its prefix (`"reports.*"`) takes. */
export function namesSubscription(route: string, subscription: string): boolean {
  return route === subscription || (route.endsWith("*") && subscription.startsWith(route.slice(0, -1)));
}

/**
 * Where pause, resume and cancel run: the application's database (its own statements run as they
 * are compiled), its engine's dialect, and what a missing control table is to the caller (the
 * runtime's `Schema` error, the CLI's exit code 2).
 */
export interface ControlPlace {
  readonly db: AnyKysely;
  readonly dialect: EngineDialect;
  readonly controlTableMissing: (table: string, cause: unknown) => Error;
}

type On = { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/** Runs a control-table statement; a missing control table is the caller's error, naming it. */
export async function onControl<R>(place: ControlPlace, on: On, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  try {
    return await on.executeQuery(query);
  } catch (error) {
    const { dialect } = place;
    if (dialect.missingTable(error) || dialect.missingTable((error as { cause?: unknown }).cause)) throw place.controlTableMissing(dialect.control.table, error);
    throw error;
  }
}

/** Wakes the control watch of every listening app at once (Postgres); elsewhere apps read at their next poll. */
export async function notifyControl({ dialect }: ControlPlace, on: On): Promise<void> {
  if (dialect.capabilities.listenNotify) await on.executeQuery(dialect.notify.notify(channelOf(dialect.control.table)));
}

/** Pauses `route` in every process: one row in the control table, written at `now` (the database's time). */
export async function pauseRoute(place: ControlPlace, route: string, now: Date): Promise<void> {
  await place.db.transaction().execute(async (trx) => {
    for (const query of place.dialect.control.pause(route, now)) await onControl(place, trx, query);
    await notifyControl(place, trx);
  });
}

/** Ends the pause of `route`; resolves `false` when it was not paused. */
export async function resumeRoute(place: ControlPlace, route: string): Promise<boolean> {
  return place.db.transaction().execute(async (trx) => {
    const result = await onControl(place, trx, place.dialect.control.resume(route));
    await notifyControl(place, trx);
    return Number(result.numAffectedRows ?? 0n) > 0;
  });
}

/**
 * The routes running apps serve, each with the names of the apps that serve it: what apps recorded in
 * the control table within `ROUTE_RECORD_KEPT_MS` of `now` (the database's time). Each app records
 * its routes when it starts and once an hour.
 */
export async function servedRoutes(place: ControlPlace, now: Date): Promise<ReadonlyMap<string, readonly string[]>> {
  const rows = (await onControl(place, place.db, place.dialect.control.readRoutes(new Date(now.getTime() - ROUTE_RECORD_KEPT_MS)))).rows;
  const served = new Map<string, string[]>();
  for (const { route, target } of rows) served.set(route, [...(served.get(route) ?? []), target]);
  return served;
}

/**
 * Cancels row `id` of `spec`'s table: `"not found"` when there is no such row (or it is done);
 * else the request goes in the control table (so a claim that takes the row from now on sees it
 * at its app's next read), then the row is taken out of its queue unless it is in work (see
 * `removeUnlessInWork`). Removed: the request is withdrawn. In work: the request stays until the
 * process running the row has aborted its signal and settled; one left by a row that finished in
 * between is cleared by the next read of an app serving the table (it finds the row gone), or, with
 * no such app, by a cancel a day later (`CANCEL_REQUEST_TTL_MS`). `now` is the database's
 * time: a lease is live while its deadline is ahead of it, as the claims judge it (never the
 * host's clock, which may run ahead and read a live lease as run out).
 */
export async function cancelRow(place: ControlPlace, spec: InboxDescription, route: string, id: unknown, now: Date): Promise<CancelResult> {
  const { db, dialect } = place;
  const control = dialect.control;
  const target = String(id);
  // Read first: once the request is written, the process running the row may serve it and settle before this reads again.
  if ((await db.executeQuery(control.findRow(spec, id))).rows.length === 0) return "not found";
  await db.transaction().execute(async (trx) => {
    await onControl(place, trx, control.purgeCancels(new Date(now.getTime() - CANCEL_REQUEST_TTL_MS)));
    for (const query of control.requestCancel(route, target, now)) await onControl(place, trx, query);
  });
  if (await removeUnlessInWork(db, dialect, spec, id, now)) {
    await db.executeQuery(control.clearCancel(route, target));
    return "removed";
  }
  await notifyControl(place, db);
  return "signalled";
}

/** What `update` did: the row took the changes, it is in work (left alone), or there is no such row (or it is done). */
export type UpdateResult = "updated" | "running" | "gone";

/**
 * Writes `values` (by column name) into row `id` of `spec`'s table unless it is in work, in one
 * statement fenced as a cancel's removal is (`writeUnlessInWork`): a live lease at `now` (the
 * database's time) in the statement's own condition, a claim's row lock passed by with `SKIP
 * LOCKED`, an advisory key tried without waiting (or held in `processKeys`, where keys live in the
 * process). `"gone"`: no row, or it is done.
 */
export async function updateRow(
  db: AnyKysely,
  dialect: EngineDialect,
  spec: InboxDescription,
  id: unknown,
  values: Readonly<Record<string, unknown>>,
  now: Date,
  processKeys?: ProcessKeys,
): Promise<UpdateResult> {
  const found = async () => (await db.executeQuery(dialect.control.findRow(spec, id))).rows.length > 0;
  if (!(await found())) return "gone";
  if (await writeUnlessInWork(db, dialect, spec, id, dialect.control.updateQueued(spec, id, values, now), processKeys)) return "updated";
  return (await found()) ? "running" : "gone";
}
