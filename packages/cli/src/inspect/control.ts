import { advisoryKeyOf, dialectFor } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import type { CancelResult } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import type { QueueTable } from "../queue-tables.js";

/** How long a cancel request waits for a process to serve it before a later cancel clears it away (as the runtime's). */
const CANCEL_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

type On = { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/**
 * The control table's statements, run as the runtime runs them (`broker.pause`, `resume`,
 * `cancel`): a missing control table is exit code 2 with the way to create it.
 */
async function onControl<R>(opened: OpenedDatabase, on: On, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  const dialect = dialectFor(opened.engine);
  try {
    return await on.executeQuery(query);
  } catch (error) {
    if (dialect.missingTable(error)) {
      throw new CliError(
        ExitCode.cannotConnect,
        `pause, resume and cancel need the control table "${dialect.control.table}" in ${opened.server} (database ${opened.database}): create it with sqlinbox ddl --control, or createControlTable(db)`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Wakes every app that listens (Postgres `listenNotify()`): they read the control table at once. */
async function notifyApps(opened: OpenedDatabase, on: On): Promise<void> {
  const dialect = dialectFor(opened.engine);
  if (dialect.notify !== null) await on.executeQuery(dialect.notify.notify(controlChannel(dialect.control.table)));
}

/** The control table's channel, named as the runtime names a table's (`sqlinbox_<table>`). */
const controlChannel = (table: string): string => `sqlinbox_${table}`;

/** The routes paused now; `null` when the database has no control table (nothing can be paused). */
export async function pausedRoutes(opened: OpenedDatabase): Promise<string[] | null> {
  const dialect = dialectFor(opened.engine);
  try {
    const rows = (await opened.db.executeQuery(dialect.control.read())).rows;
    return rows
      .filter((r) => r.kind === "pause")
      .map((r) => r.route)
      .sort();
  } catch (error) {
    if (dialect.missingTable(error)) return null;
    throw error;
  }
}

/** Pauses `route` in every process running it. */
export async function pauseRoute(opened: OpenedDatabase, route: string): Promise<void> {
  const control = dialectFor(opened.engine).control;
  await opened.db.transaction().execute(async (trx) => {
    for (const query of control.pause(route, new Date())) await onControl(opened, trx, query);
    await notifyApps(opened, trx);
  });
}

/** Ends the pause of `route`; `false` when it was not paused. */
export async function resumeRoute(opened: OpenedDatabase, route: string): Promise<boolean> {
  const control = dialectFor(opened.engine).control;
  return opened.db.transaction().execute(async (trx) => {
    const result = await onControl(opened, trx, control.resume(route));
    await notifyApps(opened, trx);
    return Number(result.numAffectedRows ?? 0n) > 0;
  });
}

/**
 * Cancels row `id` of `table` as `broker.cancel` does: not found (no such row, or done); else the
 * request goes in the control table, then the row is removed unless it is in work (a live lease, a
 * claim's row lock, its advisory key's lock); in work, the process running it aborts its signal.
 * `route` tags the request: a route name, or the table's name (every subscription of the table serves it).
 */
export async function cancelRow(opened: OpenedDatabase, table: QueueTable, route: string, id: string): Promise<CancelResult> {
  const dialect = dialectFor(opened.engine);
  const { control } = dialect;
  const { spec } = table;
  const now = new Date();
  if ((await opened.db.executeQuery(control.findRow(spec, id))).rows.length === 0) return "not found";
  await opened.db.transaction().execute(async (trx) => {
    await onControl(opened, trx, control.purgeCancels(new Date(now.getTime() - CANCEL_REQUEST_TTL_MS)));
    for (const query of control.requestCancel(route, id, now)) await onControl(opened, trx, query);
  });
  if (await removeUnlessInWork(opened, table, id, now)) {
    await opened.db.executeQuery(control.clearCancel(route, id));
    return "removed";
  }
  await notifyApps(opened, opened.db);
  return "signalled";
}

async function removeUnlessInWork(opened: OpenedDatabase, { spec }: QueueTable, id: string, now: Date): Promise<boolean> {
  const dialect = dialectFor(opened.engine);
  const { control } = dialect;
  const remove = async (on: On): Promise<boolean> => Number((await on.executeQuery(control.removeQueued(spec, id, now))).numAffectedRows ?? 0n) > 0;
  const lock = control.lockQueued(spec, id);
  if (spec.form === "rowLock" && lock !== null) {
    const isolation = dialect.capabilities.claimIsolation;
    const builder = opened.db.transaction();
    return (isolation === undefined ? builder : builder.setIsolationLevel(isolation)).execute(async (trx) => {
      if ((await trx.executeQuery(lock)).rows.length === 0) return false;
      return remove(trx);
    });
  }
  if (spec.form === "advisory" && dialect.capabilities.advisoryLocks === "session") {
    const row = (await opened.db.executeQuery(control.findRow(spec, id))).rows[0];
    if (row === undefined) return false;
    const key = advisoryKeyOf(spec, row);
    const database = spec.schema ?? opened.database;
    const tryLock = dialect.advisory.tryLock(key, database);
    const unlock = dialect.advisory.unlock(key, database);
    if (tryLock === null || unlock === null) return remove(opened.db);
    return opened.db.connection().execute(async (session) => {
      const locked = (await session.executeQuery(tryLock)).rows[0]?.locked;
      if (!(locked === true || Number(locked) === 1)) return false;
      try {
        return await remove(session);
      } finally {
        await session.executeQuery(unlock);
      }
    });
  }
  return remove(opened.db);
}
