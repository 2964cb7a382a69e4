import { createInterface } from "node:readline/promises";
import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { countPurge, purgeRows, type PurgeRequest } from "../inspect/purge.js";
import type { RowSelection } from "../inspect/rows.js";
import { oneTable } from "../queue-tables.js";
import { printJson, withConsole, withTableOptions, type TableOptions } from "../session.js";
import { ROW_SELECTIONS } from "./peek.js";

/** Asks on stderr and reads the answer from stdin; the end of input is a no. */
async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY === true });
  try {
    const answer = await new Promise<string | null>((resolve) => {
      rl.once("close", () => resolve(null));
      rl.question(question).then(resolve, () => resolve(null));
    });
    return answer !== null && /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

const DURATION_UNITS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `7d`, `24h`, `30m`, `90s`, `2w` (or several: `1d12h`) in ms. */
function parseDuration(text: string): number {
  const parts = [...text.matchAll(/(\d+)([smhdw])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) {
    throw new CliError(ExitCode.usage, `--older-than takes a duration such as 7d, 24h, 30m or 90s (s, m, h, d, w), got ${JSON.stringify(text)}`);
  }
  return parts.reduce((ms, p) => ms + Number(p[1]) * (DURATION_UNITS[p[2] as string] as number), 0);
}

/** `sqlinbox purge`: deletes rows of a state, or dead letters, or handled rows older than a duration, after asking (or with `--yes`). */
export function purgeCommand(): Command {
  return withTableOptions(new Command("purge").description("delete rows (asks first; --yes for scripts)"))
    .addOption(new Option("--state <state>", "which rows (done with --older-than)").choices(ROW_SELECTIONS as string[]))
    .option("--older-than <duration>", "only rows handled longer ago than this, on the database's clock (7d, 24h, 30m): done rows of a table with processedAt")
    .option("--group <group>", "only rows of this group")
    .option("--id <id>", "only this row (repeatable)", (v: string, p: string[] = []) => [...p, v])
    .option("-y, --yes", "do not ask")
    .action(async (options: TableOptions & { state?: RowSelection; olderThan?: string; group?: string; id?: string[]; yes?: boolean }) => {
      const olderThanMs = options.olderThan === undefined ? undefined : parseDuration(options.olderThan);
      const state = options.state ?? (olderThanMs !== undefined ? "done" : undefined);
      if (state === undefined) throw new CliError(ExitCode.usage, "say which rows: --state <state>, or --older-than <duration> for handled rows");
      if (olderThanMs !== undefined && state !== "done") {
        throw new CliError(ExitCode.usage, `--older-than selects handled rows by when they were handled: use it with --state done (its default), not --state ${state}`);
      }
      const deleted = await withConsole(options, async (c) => {
        const table = oneTable(c.tables, options.table?.[0]);
        const now = c.opened.now();
        const request: PurgeRequest = {
          state,
          group: options.group,
          ids: options.id,
          now,
          ...(olderThanMs !== undefined ? { processedBefore: new Date(now.getTime() - olderThanMs) } : {}),
        };
        const expected = await countPurge(c.opened, table, request);
        if (expected === 0) return 0;
        const what = state === "dead" ? `dead letter${expected === 1 ? "" : "s"}` : `${state} row${expected === 1 ? "" : "s"}`;
        const age = options.olderThan === undefined ? "" : ` handled more than ${options.olderThan} ago`;
        if (
          options.yes !== true &&
          !(await confirm(`Delete ${expected} ${what}${age} from ${table.spec.table}${options.group === undefined ? "" : ` (group ${options.group})`}? [y/N] `))
        ) {
          throw new CliError(ExitCode.notConfirmed, "nothing deleted: not confirmed (answer y, or pass --yes)");
        }
        return purgeRows(c.opened, table, request);
      });
      // A result goes to stdout, a failure to stderr alone (JSON keeps its object on stdout for scripts).
      if (options.json === true) printJson({ deleted });
      else if (deleted > 0) process.stdout.write(`deleted ${deleted} row${deleted === 1 ? "" : "s"}\n`);
      if (deleted === 0) throw new CliError(ExitCode.nothingMatched, "no rows matched: nothing deleted");
    });
}
