import { Command, Option } from "commander";
import { openDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { cancelRow, pauseRoute, resumeRoute } from "../inspect/control.js";
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

/** `sqlinbox pause <route>`: every app's subscription of the route stops claiming within its poll interval; rows in work finish. */
export function pauseCommand(): Command {
  return urlOption(
    new Command("pause").description("pause a route in every process (its rows in work finish); survives restarts").argument("<route>", "the route (subscription name)"),
  ).action(async (route: string, options: UrlOptions) => {
    await onDatabase(options, (opened) => pauseRoute(opened, route));
    if (options.json === true) printJson({ route, paused: true });
    else process.stdout.write(`paused ${route}: its subscriptions stop claiming within their poll interval\n`);
  });
}

/** `sqlinbox resume <route>`: the route's subscriptions claim again. */
export function resumeCommand(): Command {
  return urlOption(new Command("resume").description("resume a paused route").argument("<route>", "the route (subscription name)")).action(
    async (route: string, options: UrlOptions) => {
      const resumed = await onDatabase(options, (opened) => resumeRoute(opened, route));
      if (options.json === true) printJson({ route, resumed });
      else process.stdout.write(resumed ? `resumed ${route}\n` : `${route} was not paused\n`);
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
    else
      process.stdout.write(
        result === "removed"
          ? `removed row ${id}: it will never start\n`
          : result === "signalled"
            ? `row ${id} is in work: its ctx.signal is aborted with Cancelled in the process running it (within its poll interval); unless the handler returns an outcome, it is dropped\n`
            : `no row ${id} (or it is done)\n`,
      );
    if (result === "not found") throw new CliError(ExitCode.nothingMatched, `no row ${id}`);
  });
}
