import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { peekRows, type RowSelection } from "../inspect/rows.js";
import { oneTable } from "../queue-tables.js";
import { textTable } from "../render/text-table.js";
import { positiveInt, printJson, withConsole, withTableOptions, type TableOptions } from "../session.js";

export const ROW_SELECTIONS: readonly RowSelection[] = ["ready", "waiting", "delayed", "leased", "done", "dead", "all"];

const cell = (value: unknown): string => {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** `sqlinbox peek`: rows with decoded payloads; dead letters show `last_error` and `attempts` where the destination has them. */
export function peekCommand(): Command {
  return withTableOptions(new Command("peek").description("show rows with their payloads decoded"))
    .addOption(new Option("--state <state>", "which rows").choices(ROW_SELECTIONS as string[]).default("all"))
    .option("--group <group>", "only rows of this group")
    .option("--id <id>", "only this row (repeatable)", (v: string, p: string[] = []) => [...p, v])
    .option("--limit <n>", "rows at most", positiveInt("--limit"), 20)
    .action(async (options: TableOptions & { state: RowSelection; group?: string; id?: string[]; limit: number }) => {
      const rows = await withConsole(options, (c) =>
        peekRows(c.opened, oneTable(c.tables, options.table?.[0]), { state: options.state, group: options.group, ids: options.id, limit: options.limit, now: new Date() }),
      );
      if (options.json === true) printJson(rows);
      else if (rows.length > 0) {
        const names = [...new Set(rows.flatMap((r) => Object.keys(r.columns)))];
        const withPayload = rows.some((r) => "payload" in r);
        process.stdout.write(
          `${textTable(
            [...names, ...(withPayload ? ["payload"] : [])],
            rows.map((r) => [...names.map((n) => cell(r.columns[n] ?? null)), ...(withPayload ? [cell(r.payload)] : [])]),
          )}\n`,
        );
      }
      if (rows.length === 0)
        throw new CliError(
          ExitCode.nothingMatched,
          `no rows match (state ${options.state}${options.group === undefined ? "" : `, group ${options.group}`}${options.id === undefined ? "" : `, id ${options.id.join(", ")}`})`,
        );
    });
}
