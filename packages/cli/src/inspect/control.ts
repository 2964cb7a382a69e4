import {
  cancelRow as cancelInTable,
  namesSubscription,
  pauseRoute as pauseInTable,
  resumeRoute as resumeInTable,
  recordedSchedules,
  servedRoutes,
  type CancelResult,
  type ControlPlace,
} from "@sqlinbox/database";
import { dialectFor } from "@sqlinbox/kysely-dialects/internal";
import type { ScheduleStatus } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import type { QueueTable } from "../queue-tables.js";

/**
 * Where pause, resume and cancel run: the procedure `broker.pause`, `resume` and `cancel` run too
 * (`@sqlinbox/database`); a missing control table is exit code 2 with the way to create it.
 */
export function controlPlace(opened: OpenedDatabase): ControlPlace {
  const controlTableMissing = (table: string, cause: unknown): Error =>
    new CliError(
      ExitCode.cannotConnect,
      `pause, resume and cancel need the control table "${table}" in ${opened.server} (database ${opened.database}): create it with sqlinbox ddl --control, or createControlTable(db)`,
      { cause },
    );
  return { db: opened.db, dialect: dialectFor(opened.engine), controlTableMissing };
}

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

/** The cron schedules running apps recorded; `undefined` when the database has no control table. */
export async function schedules(opened: OpenedDatabase): Promise<ScheduleStatus[] | undefined> {
  const dialect = dialectFor(opened.engine);
  try {
    const recorded = await recordedSchedules({ db: opened.db, dialect, controlTableMissing: (_table, cause) => cause as Error }, opened.now());
    return recorded.map((s) => ({
      route: s.route,
      app: s.app,
      pattern: s.pattern,
      timeZone: s.timeZone,
      nextTick: s.nextTick.toISOString(),
      ...(s.lastTick === undefined ? {} : { lastTick: s.lastTick.toISOString() }),
      overdue: s.overdue,
    }));
  } catch (error) {
    if (dialect.missingTable(error)) return undefined;
    throw error;
  }
}

/** The routes a module declares (`--module`): its exported queues' and subscribers' names. */
export interface DeclaredRoutes {
  readonly module: string;
  readonly routes: readonly string[];
}

/**
 * Refuses a route the module does not declare: none of its routes is `route` (or, for a prefix
 * `"reports.*"`, none starts with it). A route is a subscription's name.
 */
export function refuseUndeclared(route: string, declared: DeclaredRoutes, doing: string): void {
  if (declared.routes.some((name) => namesSubscription(route, name))) return;
  const routes = declared.routes.length === 0 ? "no route: it exports no InboxQueue or subscriber" : `the routes ${declared.routes.join(", ")}`;
  throw new CliError(ExitCode.usage, `route "${route}" is not declared in ${declared.module}, which declares ${routes}; nothing was ${doing}`);
}

/** Warns on stderr when no running app serves `route`: none recorded it in the control table in the last day. */
export async function warnUnserved(opened: OpenedDatabase, route: string, done: string): Promise<void> {
  const served = await servedRoutes(controlPlace(opened), opened.now());
  if ([...served.keys()].some((name) => namesSubscription(route, name))) return;
  const known = served.size === 0 ? "no app recorded the routes it serves in the last day" : `the routes apps serve: ${[...served.keys()].sort().join(", ")}`;
  process.stderr.write(`sqlinbox: warning: no running app serves a route "${route}" (${known}); ${done} all the same. Pass --module to check the name against your queues.\n`);
}

/** Pauses `route` in every process running it. */
export function pauseRoute(opened: OpenedDatabase, route: string): Promise<void> {
  return pauseInTable(controlPlace(opened), route, opened.now());
}

/** Ends the pause of `route`; `false` when it was not paused. */
export function resumeRoute(opened: OpenedDatabase, route: string): Promise<boolean> {
  return resumeInTable(controlPlace(opened), route);
}

/**
 * Cancels row `id` of `table` as `broker.cancel` does: not found (no such row, or done); else the
 * request goes in the control table, then the row is removed unless it is in work (a live lease on
 * the database's clock, a claim's row lock, its advisory key's lock); in work, the process running it
 * aborts its signal. `route` tags the request: a route name, or the table's name (every subscription
 * of the table serves it).
 */
export function cancelRow(opened: OpenedDatabase, table: QueueTable, route: string, id: string): Promise<CancelResult> {
  return cancelInTable(controlPlace(opened), table.spec, route, id, opened.now());
}
