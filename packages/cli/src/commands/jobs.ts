import { SEARCH_WINDOW } from "@sqlinbox/kysely-dialects/internal";
import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { JOB_STATES, listJobs, type JobState, type ListedJob } from "../inspect/job-list.js";
import { showJob, type ShownJob } from "../inspect/job-show.js";
import { textTable } from "../render/text-table.js";
import { positiveInt, printJson, withConsole, withTableOptions, type TableOptions } from "../session.js";
import { equalsOf, tableOptionsFor, targetTable, withFilters, type FilterOptions } from "./job-filters.js";
import { bulkCommands } from "./jobs-bulk.js";

const cell = (value: unknown): string => {
  const text = value === null || value === undefined ? "" : typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  const line = text.replace(/\s+/g, " ");
  return line.length > 48 ? `${line.slice(0, 45)}...` : line;
};

/** Jobs as a text table: id and state, then every column, then the payload. */
function jobsText(rows: readonly ListedJob[]): string {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.columns)))].filter((n) => n !== "id");
  const withPayload = rows.some((r) => "payload" in r);
  return textTable(
    ["id", "state", ...names, ...(withPayload ? ["payload"] : [])],
    rows.map((r) => [r.id, r.state, ...names.map((n) => cell(r.columns[n])), ...(withPayload ? [cell(r.payload)] : [])]),
  );
}

/** One job as lines of text: state and the role columns first, the other columns, then the payload. */
function jobText(job: ShownJob): string {
  const lines = [`job ${job.id} in ${job.table}: ${job.state}`];
  const show = (label: string, value: unknown) =>
    lines.push(`${label}: ${value === null || value === undefined ? "—" : typeof value === "string" ? value : JSON.stringify(value)}`);
  if ("attempt" in job) show("attempt", job.attempt);
  if ("runAt" in job) show("run at", job.runAt ?? "when claimed (no run-at set)");
  if ("leaseUntil" in job) show("lease until", job.leaseUntil);
  if ("processedAt" in job) show("processed at", job.processedAt);
  if ("lastError" in job) show("last error", job.lastError);
  show("held by", "holder" in job ? job.holder : "cannot be seen from outside (advisory keys on SQLite live in the application's process)");
  for (const key of ["headers", "result", "progress"] as const) if (key in job) show(key, job[key]);
  for (const [name, value] of Object.entries(job.columns)) show(name, value);
  for (const p of job.policies) {
    const limits = [
      p.maxInWork === undefined ? null : `at most ${p.maxInWork} in work`,
      p.maxInWorkPerKey === undefined ? null : `${p.maxInWorkPerKey} per key`,
      p.rateLimit === undefined ? null : `${p.rateLimit.max} starts per ${p.rateLimit.perMs} ms`,
    ].filter((x) => x !== null);
    lines.push(
      `route ${p.route}: max attempts ${p.maxAttempts ?? "none (retried for ever)"}, dead letters ${p.deadLetter ?? "none declared"}, ` +
        `timeout ${p.timeout === undefined ? "none" : `${p.timeout.ms} ms + ${p.timeout.graceMs} ms grace`}, on a throw ${p.onError}` +
        `${p.leaseMs === undefined ? "" : `, lease ${p.leaseMs} ms`}, ${p.workers} workers × batch ${p.batch}${limits.length === 0 ? "" : `, ${limits.join(", ")}`}`,
    );
  }
  if (job.policies.length === 0) lines.push("route policy: not known (give --module, a module that exports the queues)");
  const run = job.workflow;
  if (run !== null) {
    const name = (s: { step: string; item: number | null }) => (s.item === null ? s.step : `${s.step}[${s.item}]`);
    lines.push(`workflow run ${run.name} ${run.id}: ${run.state}; this job is step ${name(run)}`);
    for (const s of run.steps) lines.push(`  ${name(s)}: ${s.state}${s.jobId === null ? "" : ` (${s.jobTable} #${s.jobId})`}`);
  }
  if (job.payload !== undefined) {
    lines.push("payload:", job.payload);
    if (job.payloadBytes !== undefined) lines.push(`(payload cut: showing the first 64 KiB of ${job.payloadBytes} bytes)`);
  }
  return lines.join("\n");
}

function listCommand(): Command {
  return withFilters(withTableOptions(new Command("list").description("list jobs in a state, a page at a time in id order").argument("<route|table>", "a route or a table's name")))
    .addOption(new Option("--state <state>", "which jobs").choices(JOB_STATES as unknown as string[]).makeOptionMandatory())
    .option("--limit <n>", "jobs per page (at most 1000)", positiveInt("--limit"), 50)
    .option("--after <id>", "start after this id: the `next` of the page before")
    .option("--search <text>", `only jobs whose payload text holds this (case-insensitive; a page reads at most ${SEARCH_WINDOW.toLocaleString("en-US")} rows from --after)`)
    .action(async (target: string, raw: FilterOptions & { state: JobState; limit: number; after?: string; search?: string }) => {
      if (raw.limit > 1000) throw new CliError(ExitCode.usage, `--limit takes at most 1000, got ${raw.limit}`);
      const options = tableOptionsFor(target, raw);
      const page = await withConsole(options, async (c) => {
        const table = targetTable(c, target, options);
        return listJobs(c.opened, table, {
          state: options.state,
          equals: equalsOf(table, target, options, options.state),
          after: options.after,
          limit: options.limit,
          search: options.search,
        });
      });
      if (options.json === true) printJson(page);
      else {
        if (page.rows.length > 0) process.stdout.write(`${jobsText(page.rows)}\n`);
        if (page.next !== null) process.stdout.write(`next page: --after ${page.next}\n`);
      }
      if (page.rows.length === 0 && page.next === null)
        throw new CliError(
          ExitCode.nothingMatched,
          `no ${options.state} jobs${options.search === undefined ? "" : ` whose payload holds "${options.search}"`} in ${target}${options.after === undefined ? "" : ` after id ${options.after}`}`,
        );
    });
}

function showCommand(): Command {
  return withTableOptions(
    new Command("show")
      .description("show one job: state, attempt, run-at, lease, last error, payload")
      .argument("<route|table>", "a route or a table's name")
      .argument("<id>", "the job's id"),
  ).action(async (target: string, id: string, raw: TableOptions) => {
    const options = tableOptionsFor(target, raw);
    const job = await withConsole(options, async (c) => showJob(c.opened, targetTable(c, target, options), id));
    if (job === undefined) throw new CliError(ExitCode.nothingMatched, `no job ${id} in ${target} (nor among its dead letters)`);
    if (options.json === true) printJson(job);
    else process.stdout.write(`${jobText(job)}\n`);
  });
}

/** `sqlinbox jobs`: list and show jobs, and act on many at once (cancel, delete, retry, reschedule). */
export function jobsCommand(): Command {
  const jobs = new Command("jobs").description("browse jobs (list, show) and act on many at once (cancel, delete, retry, reschedule)");
  for (const command of [listCommand(), showCommand(), ...bulkCommands()]) jobs.addCommand(command.exitOverride().showHelpAfterError());
  return jobs;
}
