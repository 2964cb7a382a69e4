import type { Command } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import type { JobState } from "../inspect/job-list.js";
import type { OperatorConsole } from "../operator-console.js";
import { oneTable, type QueueTable } from "../queue-tables.js";
import type { TableOptions } from "../session.js";

/** The filters `jobs list` and the bulk actions take. */
export interface FilterOptions extends TableOptions {
  readonly key?: string;
  readonly where?: string[];
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** Adds `--key` and `--where` to a command. */
export const withFilters = (command: Command): Command =>
  command
    .option("--key <key>", "only rows whose key (the dedup key column, else the order key) is this")
    .option("--where <column=value>", "only rows whose column holds this value (repeatable)", collect);

/** The table options with `--table <route|table>` by default when neither `--module` nor `--table` names one. */
export function tableOptionsFor<T extends TableOptions>(target: string, options: T): T {
  return options.module === undefined && (options.table ?? []).length === 0 ? { ...options, table: [target] } : options;
}

/** The table a `<route|table>` argument names: the selected table of that name, else the one table (the argument is then a route). */
export function targetTable(c: OperatorConsole, target: string, options: TableOptions): QueueTable {
  return c.tables.find((t) => t.spec.table === target) ?? oneTable(c.tables, options.table?.[0]);
}

/**
 * The equalities of `--key`, `--where` and the route, by column name. A route that is not the
 * table's name narrows a table with a group column to its rows (a table shared by routes keeps each
 * route's rows under its name), as the runtime's list does; never the dead letters.
 */
export function equalsOf(table: QueueTable, target: string, options: FilterOptions, state: JobState | undefined): Record<string, unknown> {
  const { spec } = table;
  const out: Record<string, unknown> = {};
  if (options.key !== undefined) {
    const column = spec.key ?? spec.orderKey;
    if (column === undefined) throw new CliError(ExitCode.usage, `--key needs a dedup key or an order key column, and table "${spec.table}" has neither`);
    out[column.name] = options.key;
  }
  for (const pair of options.where ?? []) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new CliError(ExitCode.usage, `--where takes column=value, such as customer_id=42; got "${pair}"`);
    const name = pair.slice(0, at);
    const column = spec.columns.find((c) => c.name === name || c.key === name);
    if (state === "deadLettered" && column === undefined) out[name] = pair.slice(at + 1);
    else if (column === undefined || column.role === "payload") {
      throw new CliError(ExitCode.usage, `--where names "${name}", which is not a column of table "${spec.table}" (a payload is searched with --search)`);
    } else out[column.name] = pair.slice(at + 1);
  }
  if (spec.group !== undefined && target !== spec.table && !target.endsWith("*") && state !== "deadLettered") out[spec.group.name] = target;
  return out;
}
