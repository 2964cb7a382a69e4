import type { InboxDescription } from "@sqlinbox/core/internal";
import type { EngineDialect } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery } from "kysely";
import { channelOf } from "../publish/listen.js";
import type { AnyKysely } from "../drivers/database.js";
import { removeUnlessInWork } from "../claim/remove-queued.js";
import { controlTableMissing } from "../errors.js";

/** What `cancel` did: the row will never start, its handler was told to stop, or there is no such row (or it is done). */
export type CancelResult = "removed" | "signalled" | "not found";

/** How long a cancel request waits for a process to serve it before a later cancel clears it away. */
export const CANCEL_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

/** A statement runner: the runtime's own statements on the application's connection, without its plugins. */
type On = Pick<AnyKysely, "executeQuery">;

/** Runs a control-table statement; a missing control table is a `Schema` error naming it. */
async function onControl<R>(dialect: EngineDialect, on: On, query: CompiledQuery<R>): Promise<R[]> {
  try {
    return (await on.executeQuery(query)).rows;
  } catch (error) {
    if (dialect.missingTable(error) || dialect.missingTable((error as { cause?: unknown }).cause)) throw controlTableMissing(dialect.control.table, error);
    throw error;
  }
}

/** Wakes the control watch of every listening app at once (Postgres); elsewhere apps read at their next poll. */
async function notifyControl(dialect: EngineDialect, on: On): Promise<void> {
  if (dialect.notify !== null) await on.executeQuery(dialect.notify.notify(channelOf(dialect.control.table)));
}

/** Pauses `route` in every process: one row in the control table. */
export async function pauseRoute(dialect: EngineDialect, db: AnyKysely, route: string, now: Date): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const query of dialect.control.pause(route, now)) await onControl(dialect, trx, query);
    await notifyControl(dialect, trx);
  });
}

/** Ends the pause of `route`; resolves `false` when it was not paused. */
export async function resumeRoute(dialect: EngineDialect, db: AnyKysely, route: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const result = await trx.executeQuery(dialect.control.resume(route)).catch((error: unknown) => {
      if (dialect.missingTable(error)) throw controlTableMissing(dialect.control.table, error);
      throw error;
    });
    await notifyControl(dialect, trx);
    return Number(result.numAffectedRows ?? 0n) > 0;
  });
}

/**
 * Cancels row `id` of `spec`'s table: `"not found"` when there is no such row (or it is done);
 * else the request goes in the control table (so a claim that takes the row from now on sees it
 * at its app's next read), then the row is taken out of its queue unless it is in work (see
 * `removeUnlessInWork`). Removed: the request is withdrawn. In work: the request stays until the
 * process running the row has aborted its signal and settled; one left by a row that finished in
 * between is cleared by a cancel a day later (`CANCEL_REQUEST_TTL_MS`).
 */
export async function cancelRow(dialect: EngineDialect, db: AnyKysely, spec: InboxDescription, route: string, id: unknown, now: Date): Promise<CancelResult> {
  const control = dialect.control;
  const target = String(id);
  // Read first: once the request is written, the process running the row may serve it and settle before this reads again.
  if ((await db.executeQuery(control.findRow(spec, id))).rows.length === 0) return "not found";
  await db.transaction().execute(async (trx) => {
    await onControl(dialect, trx, control.purgeCancels(new Date(now.getTime() - CANCEL_REQUEST_TTL_MS)));
    for (const query of control.requestCancel(route, target, now)) await onControl(dialect, trx, query);
  });
  if (await removeUnlessInWork(dialect, db, spec, id, now)) {
    await db.executeQuery(control.clearCancel(route, target));
    return "removed";
  }
  await notifyControl(dialect, db);
  return "signalled";
}
