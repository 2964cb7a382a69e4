import { Command, Option } from "commander";
import { openDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { cancelRow, type DeclaredRoutes, pauseRoute, refuseUndeclared, resumeRoute, warnUnserved } from "../inspect/control.js";
import { loadModule } from "../load-module.js";
import { oneTable } from "../queue-tables.js";
import { printJson, withConsole, withTableOptions, type TableOptions } from "../session.js";

interface UrlOptions {
  readonly url?: string;
  readonly json?: boolean;
}

/** Runs `work` on the URL's database (no tables needed) and closes it. */
async function onDatabase<T>(options: UrlOptions, work: (opened: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T> {
  if (options.url === undefined || options.url.length === 0) throw new CliError(ExitCode.usage, "no database URL: pass --url or set SQLINBOX_URL");
  const opened = await openDatabase(options.url);
  try {
    return await work(opened);
  } finally {
    await opened.close();
  }
}

const urlOption = (command: Command): Command =>
  command
    .addOption(new Option("--url <url>", "database URL: postgres://…, mysql://…, mariadb://…, sqlite:path").env("SQLINBOX_URL"))
    .option("--json", "print JSON for machines instead of text");

interface RouteOptions extends UrlOptions {
  readonly module?: string;
}

const routeOptions = (command: Command): Command =>
  urlOption(command).option("--module <path>", "a module that exports the queues (InboxQueue values or subscribers): a route none of them declares is refused");

/** The routes `--module` declares, read before anything connects; `undefined` without it. */
async function declaredRoutes(options: RouteOptions): Promise<DeclaredRoutes | undefined> {
  if (options.module === undefined) return undefined;
  return { module: options.module, routes: (await loadModule(options.module)).routes };
}

/** `sqlinbox pause <route>`: every app's subscription of the route stops claiming within its poll interval; rows in work finish. */
export function pauseCommand(): Command {
  return routeOptions(
    new Command("pause").description("pause a route in every process (its rows in work finish); survives restarts").argument("<route>", "the route (subscription name)"),
  ).action(async (route: string, options: RouteOptions) => {
    const declared = await declaredRoutes(options);
    if (declared !== undefined) refuseUndeclared(route, declared, "paused");
    await onDatabase(options, async (opened) => {
      if (declared === undefined) await warnUnserved(opened, route, "paused");
      await pauseRoute(opened, route);
    });
    if (options.json === true) printJson({ route, paused: true });
    else process.stdout.write(`paused ${route}: its subscriptions stop claiming within their poll interval\n`);
  });
}

/** `sqlinbox resume <route>`: the route's subscriptions claim again. */
export function resumeCommand(): Command {
  return routeOptions(new Command("resume").description("resume a paused route").argument("<route>", "the route (subscription name)")).action(
    async (route: string, options: RouteOptions) => {
      const declared = await declaredRoutes(options);
      if (declared !== undefined) refuseUndeclared(route, declared, "resumed");
      const resumed = await onDatabase(options, async (opened) => {
        const done = await resumeRoute(opened, route);
        if (done && declared === undefined) await warnUnserved(opened, route, "resumed");
        return done;
      });
      // A result goes to stdout, a failure to stderr alone (JSON keeps its object on stdout for scripts).
      if (options.json === true) printJson({ route, resumed });
      else if (resumed) process.stdout.write(`resumed ${route}\n`);
      if (!resumed) throw new CliError(ExitCode.nothingMatched, `route "${route}" was not paused`);
    },
  );
}

/** `sqlinbox cancel <route> <id>`: a row not in work is removed; a row in work has its handler's signal aborted. */
export function cancelCommand(): Command {
  return withTableOptions(
    new Command("cancel")
      .description("cancel a job: a row not in work is removed and never starts; a row in work has its ctx.signal aborted wherever it runs")
      .argument("<route>", "the route the row was published to (or the table's name)")
      .argument("<id>", "the row's id"),
  ).action(async (route: string, id: string, options: TableOptions) => {
    const result = await withConsole(options, async (c) => cancelRow(c.opened, oneTable(c.tables, options.table?.[0]), route, id));
    if (options.json === true) printJson({ route, id, result });
    else if (result === "removed") process.stdout.write(`removed row ${id}: it will never start\n`);
    else if (result === "signalled")
      process.stdout.write(
        `row ${id} is in work: its ctx.signal is aborted with Cancelled in the process running it (within its poll interval); unless the handler returns an outcome, it is dropped\n`,
      );
    if (result === "not found") throw new CliError(ExitCode.nothingMatched, `no row ${id} (or it is done)`);
  });
}
