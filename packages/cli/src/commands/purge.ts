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

/** `sqlinbox purge`: deletes rows of a state, or dead letters, after asking (or with `--yes`). */
export function purgeCommand(): Command {
  return withTableOptions(new Command("purge").description("delete rows (asks first; --yes for scripts)"))
    .addOption(new Option("--state <state>", "which rows").choices(ROW_SELECTIONS as string[]).makeOptionMandatory())
    .option("--group <group>", "only rows of this group")
    .option("--id <id>", "only this row (repeatable)", (v: string, p: string[] = []) => [...p, v])
    .option("-y, --yes", "do not ask")
    .action(async (options: TableOptions & { state: RowSelection; group?: string; id?: string[]; yes?: boolean }) => {
      const deleted = await withConsole(options, async (c) => {
        const table = oneTable(c.tables, options.table?.[0]);
        const request: PurgeRequest = { state: options.state, group: options.group, ids: options.id, now: new Date() };
        const expected = await countPurge(c.opened, table, request);
        if (expected === 0) return 0;
        const what = options.state === "dead" ? "dead letters" : `${options.state} rows`;
        if (
          options.yes !== true &&
          !(await confirm(`Delete ${expected} ${what} from ${table.spec.table}${options.group === undefined ? "" : ` (group ${options.group})`}? [y/N] `))
        ) {
          throw new CliError(ExitCode.notConfirmed, "nothing deleted: not confirmed (answer y, or pass --yes)");
        }
        return purgeRows(c.opened, table, request);
      });
      if (options.json === true) printJson({ deleted });
      else process.stdout.write(`deleted ${deleted} row${deleted === 1 ? "" : "s"}\n`);
      if (deleted === 0) throw new CliError(ExitCode.nothingMatched, "no rows matched");
    });
}
