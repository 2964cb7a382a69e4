import { Command, Option } from "commander";
import { openDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { listRuns, showRun } from "../inspect/workflows.js";
import { textTable } from "../render/text-table.js";
import { positiveInt, printJson } from "../session.js";

interface Options {
  readonly url?: string;
  readonly json?: boolean;
}

async function onDatabase<T>(options: Options, work: (opened: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T> {
  if (options.url === undefined || options.url.length === 0) throw new CliError(ExitCode.usage, "no database URL: pass --url or set SQLINBOX_URL");
  const opened = await openDatabase(options.url);
  try {
    return await work(opened);
  } finally {
    await opened.close();
  }
}

const withUrl = (command: Command): Command =>
  command
    .addOption(new Option("--url <url>", "database URL: postgres://…, mysql://…, mariadb://…, sqlite:path").env("SQLINBOX_URL"))
    .option("--json", "print JSON for machines instead of text");

/** `sqlinbox workflows`: the runs in the workflow table, a page at a time, of one workflow and state when given. */
export function workflowsCommand(): Command {
  return withUrl(
    new Command("workflows")
      .description("list workflow runs (sqlinbox_workflows): id, workflow, state")
      .option("--workflow <name>", "only the runs of this workflow")
      .addOption(new Option("--state <state>", "only the runs in this state").choices(["running", "done", "failed", "cancelled"]))
      .option("--after <id>", "the page after this run id (the last id of the page before)")
      .option("--limit <n>", "runs per page (default 50)", positiveInt("--limit"), 50),
  ).action(async (options: Options & { workflow?: string; state?: string; after?: string; limit: number }) => {
    const runs = await onDatabase(options, (opened) => listRuns(opened, { workflow: options.workflow, state: options.state, after: options.after, limit: options.limit }));
    if (options.json === true) printJson({ runs });
    else if (runs.length === 0) process.stdout.write("no runs\n");
    else
      process.stdout.write(
        `${textTable(
          ["run", "workflow", "state"],
          runs.map((r) => [r.id, r.workflow, r.state]),
        )}\n`,
      );
  });
}

/** `sqlinbox workflow <id>`: one run, its input and each step's (and fan-out child's) state, job and result. */
export function workflowCommand(): Command {
  return withUrl(new Command("workflow").description("show one workflow run: its steps, their jobs and results").argument("<id>", "the run's id")).action(
    async (id: string, options: Options) => {
      const shown = await onDatabase(options, (opened) => showRun(opened, id));
      if (shown === undefined) throw new CliError(ExitCode.nothingMatched, `no workflow run has the id ${id}`);
      if (options.json === true) {
        printJson(shown);
        return;
      }
      const { run, steps } = shown;
      const failure = run.failure === null ? "" : `, failed: ${JSON.stringify(run.failure)}`;
      process.stdout.write(`run ${run.id} of workflow ${run.workflow}: ${run.state}${failure}\ninput: ${JSON.stringify(run.input)}\n`);
      const rows = steps.map((s) => [s.item === null ? s.step : `${s.step}[${s.item}]`, s.state, s.job ?? "—", s.result === null ? "—" : JSON.stringify(s.result)]);
      process.stdout.write(`${textTable(["step", "state", "job", "result"], rows)}\n`);
    },
  );
}
