import type { BulkAction } from "@sqlinbox/database";
import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { runBulk, type BulkSelection } from "../inspect/job-bulk.js";
import { printJson, withConsole, withTableOptions } from "../session.js";
import { equalsOf, tableOptionsFor, targetTable, withFilters, type FilterOptions } from "./job-filters.js";

const BULK_STATES = ["scheduled", "waiting", "running", "deadLettered"] as const;

interface BulkOptions extends FilterOptions {
  readonly ids?: string;
  readonly state?: (typeof BULK_STATES)[number];
  readonly at?: string;
  readonly in?: number;
  readonly dryRun?: boolean;
  readonly allowWrites?: boolean;
}

const WHAT: Readonly<Record<BulkAction, string>> = {
  cancel: "cancel jobs: rows not in work are removed and never start; rows in work have their ctx.signal aborted",
  delete: "delete jobs that are not in work (rows in work are left alone)",
  retry: "make jobs due now (dead letters: move them back into the table)",
  reschedule: "set when jobs run (--at or --in); rows in work are left alone",
};

const DONE: Readonly<Record<BulkAction, string>> = { cancel: "removed", delete: "deleted", retry: "made due now", reschedule: "rescheduled" };

const nonNegative = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new CliError(ExitCode.usage, `--in takes a whole number of milliseconds, got "${value}"`);
  return n;
};

/** The run-at of `reschedule`: `--at` (an ISO-8601 time) or `--in` (ms from the database's now). */
function runAtOf(action: BulkAction, options: BulkOptions, now: Date): Date | undefined {
  if (action !== "reschedule") {
    if (options.at !== undefined || options.in !== undefined) throw new CliError(ExitCode.usage, `--at and --in are for jobs reschedule, not jobs ${action}`);
    return undefined;
  }
  if ((options.at === undefined) === (options.in === undefined))
    throw new CliError(ExitCode.usage, "jobs reschedule takes the time to run at: --at <ISO time> or --in <ms> (one of them)");
  if (options.in !== undefined) return new Date(now.getTime() + options.in);
  const at = new Date(options.at as string);
  if (Number.isNaN(at.getTime())) throw new CliError(ExitCode.usage, `--at takes an ISO-8601 time such as 2030-01-01T09:00:00Z, got "${options.at}"`);
  return at;
}

/** The rows the options select: `--ids`, or `--state` (with `--state deadLettered`, `--ids` names dead letters). */
function selectionOf(options: BulkOptions): Omit<BulkSelection, "equals"> {
  const ids = options.ids?.split(",").map((id) => id.trim());
  if (ids?.some((id) => id.length === 0)) throw new CliError(ExitCode.usage, `--ids takes ids separated by commas, such as 1,2,3; got "${options.ids}"`);
  if (ids !== undefined && options.state !== undefined && options.state !== "deadLettered") {
    throw new CliError(ExitCode.usage, "say which rows with --ids or with --state, not both (--state deadLettered --ids names dead letters)");
  }
  if (ids === undefined && options.state === undefined) throw new CliError(ExitCode.usage, "say which rows: --ids 1,2,3 or --state <state>");
  if (ids !== undefined && (options.key !== undefined || (options.where ?? []).length > 0))
    throw new CliError(ExitCode.usage, "--key and --where filter a --state selection, not --ids");
  return { ids, state: options.state };
}

function bulkCommand(action: BulkAction): Command {
  return withFilters(withTableOptions(new Command(action).description(WHAT[action]).argument("<route|table>", "a route or a table's name")))
    .option("--ids <ids>", "these rows, separated by commas: 1,2,3")
    .addOption(new Option("--state <state>", "every row in this state").choices(BULK_STATES as unknown as string[]))
    .option("--at <time>", "reschedule: run at this ISO-8601 time")
    .option("--in <ms>", "reschedule: run this many milliseconds from now (the database's clock)", nonNegative)
    .option("--dry-run", "print how many rows the action would take, and change nothing")
    .option("--allow-writes", "change rows (without it, nothing is written: pass --dry-run to count first)")
    .action(async (target: string, raw: BulkOptions) => {
      const partial = selectionOf(raw);
      if (raw.dryRun !== true && raw.allowWrites !== true) {
        throw new CliError(ExitCode.notConfirmed, `jobs ${action} changes rows: pass --allow-writes to run it, or --dry-run to count what it would take`);
      }
      const options = tableOptionsFor(target, raw);
      const { report, table } = await withConsole(options, async (c) => {
        const found = targetTable(c, target, options);
        const selection = { ...partial, equals: equalsOf(found, target, options, partial.state) };
        const runAt = runAtOf(action, options, c.opened.now());
        return { report: await runBulk(c.opened, found, { action, route: target, selection, runAt, dryRun: raw.dryRun === true }), table: found.spec.table };
      });
      const what = partial.state === "deadLettered" ? "dead letters" : "rows";
      if (report.counts === undefined) {
        if (options.json === true) printJson({ action, dryRun: true, matched: report.matched });
        else if (report.matched > 0) process.stdout.write(`dry run: jobs ${action} would take ${report.matched} ${what} of ${table}; nothing changed\n`);
        if (report.matched === 0) throw new CliError(ExitCode.nothingMatched, `no ${what} match in ${table}: nothing would change`);
        return;
      }
      const c = report.counts;
      if (options.json === true) printJson({ action, matched: report.matched, ...c });
      else {
        const parts = [`${c.touched} ${DONE[action]}`];
        if (action === "cancel") parts.push(`${c.signalled} in work signalled`);
        parts.push(`${c.inWork} left alone (in work)`, `${c.notFound} not found`);
        process.stdout.write(`jobs ${action} on ${table}: ${parts.join(", ")}\n`);
      }
      if (c.touched + c.signalled === 0 && c.inWork === 0) throw new CliError(ExitCode.nothingMatched, `no ${what} matched in ${table}: nothing changed`);
      if (c.inWork > 0 || c.notFound > 0) {
        throw new CliError(ExitCode.partly, `done in part: ${c.inWork} ${what} left alone because a claim holds them, ${c.notFound} not found (or done)`);
      }
    });
}

/** `sqlinbox jobs cancel|delete|retry|reschedule`: one action on many rows, each fenced as `sqlinbox cancel` fences one. */
export function bulkCommands(): Command[] {
  return (["cancel", "delete", "retry", "reschedule"] as const).map(bulkCommand);
}
