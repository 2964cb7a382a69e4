import type { PeekedRow } from "@sqlinbox/dashboard";
import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { countDeadLetters } from "../inspect/dead-letters.js";
import { peekRows, type RowSelection } from "../inspect/rows.js";
import { oneTable } from "../queue-tables.js";
import { textTable } from "../render/text-table.js";
import { positiveInt, printJson, withConsole, withTableOptions, type TableOptions } from "../session.js";

export const ROW_SELECTIONS: readonly RowSelection[] = ["ready", "waiting", "delayed", "leased", "done", "dead", "all"];

const cell = (value: unknown): string => {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};

/** Rows as a text table: every column any of them has, then the decoded payload. */
function rowsText(rows: readonly PeekedRow[]): string {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.columns)))];
  const withPayload = rows.some((r) => "payload" in r);
  return textTable(
    [...names, ...(withPayload ? ["payload"] : [])],
    rows.map((r) => [...names.map((n) => cell(r.columns[n] ?? null)), ...(withPayload ? [cell(r.payload)] : [])]),
  );
}

/**
 * `sqlinbox peek`: rows with decoded payloads; dead letters show `last_error` and `attempts` where the
 * destination has them. `--state all` (the default) shows a dead-letter table's rows too, after the
 * table's own, under a line naming it. A list cut by `--limit` says so on stderr, with how many more
 * dead letters there are.
 */
export function peekCommand(): Command {
  return withTableOptions(new Command("peek").description("show rows with their payloads decoded (--state all: the dead-letter table's too)"))
    .addOption(new Option("--state <state>", "which rows").choices(ROW_SELECTIONS as string[]).default("all"))
    .option("--group <group>", "only rows of this group")
    .option("--id <id>", "only this row (repeatable)", (v: string, p: string[] = []) => [...p, v])
    .option("--limit <n>", "rows at most", positiveInt("--limit"), 20)
    .action(async (options: TableOptions & { state: RowSelection; group?: string; id?: string[]; limit: number }) => {
      const { rows, more } = await withConsole(options, async (c) => {
        const table = oneTable(c.tables, options.table?.[0]);
        // One row past the limit tells a cut list from a full one.
        const found = await peekRows(c.opened, table, { state: options.state, group: options.group, ids: options.id, limit: options.limit + 1, now: c.opened.now() });
        const shown = found.slice(0, options.limit);
        if (found.length <= options.limit) return { rows: shown, more: undefined };
        if (options.state !== "dead" || options.id !== undefined) return { rows: shown, more: "more rows match" };
        const dead = (await countDeadLetters(c.opened, table, options.group)) - shown.length;
        return { rows: shown, more: `${dead} more dead letter${dead === 1 ? "" : "s"}` };
      });
      if (options.json === true) printJson(rows);
      else if (rows.length > 0) {
        const own = rows.filter((r) => r.deadLetterTable === undefined);
        const sections = own.length > 0 ? [rowsText(own)] : [];
        for (const dead of new Set(rows.flatMap((r) => (r.deadLetterTable === undefined ? [] : [r.deadLetterTable])))) {
          sections.push(`dead letters in ${dead}:\n${rowsText(rows.filter((r) => r.deadLetterTable === dead))}`);
        }
        process.stdout.write(`${sections.join("\n\n")}\n`);
      }
      if (more !== undefined) process.stderr.write(`sqlinbox: showing the first ${options.limit}; ${more} (raise --limit to see them)\n`);
      if (rows.length === 0)
        throw new CliError(
          ExitCode.nothingMatched,
          `no rows match (state ${options.state}${options.group === undefined ? "" : `, group ${options.group}`}${options.id === undefined ? "" : `, id ${options.id.join(", ")}`})`,
        );
    });
}
