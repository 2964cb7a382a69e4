import { Option, type Command } from "commander";
import { openDatabase } from "./connect.js";
import { DEFAULT_COUNTING, type StatusCounting } from "./inspect/capped.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { OperatorConsole } from "./operator-console.js";
import { resolveTables } from "./queue-tables.js";

/** The options every command that reads tables takes. */
export interface TableOptions {
  readonly url?: string;
  readonly module?: string;
  readonly table?: string[];
  readonly advisoryKey?: string;
  readonly fifo?: boolean;
  readonly deadLetterTable?: string;
  readonly deadLetterGroup?: string;
  readonly json?: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * Adds the connection and table options to a command, and `--json` to those that print a result
 * (`json: false` for the dashboard, which prints none).
 */
export function withTableOptions(command: Command, { json = true }: { readonly json?: boolean } = {}): Command {
  command = command
    .addOption(new Option("--url <url>", "database URL: postgres://…, mysql://…, mariadb://…, sqlite:path").env("SQLINBOX_URL"))
    .option("--module <path>", "a module whose exports are the table descriptions (InboxSpec / defineInbox values) and, optionally, deadLetters")
    .option("--table <name>", "a table to work on; without --module its roles are read from the column names (repeatable)", collect)
    .option("--advisory-key <template>", 'with --table: the advisory key template, such as "report-{customer_id}"')
    .option("--fifo", "with --table: the group column is fifo (only each group's head is ready; the due rows behind it are waiting)")
    .option("--dead-letter-table <name>", "the table the source's dead letters are moved to")
    .option("--dead-letter-group <group=deadGroup>", "dead letters kept in a group of the same table, such as reports=reports.dead");
  return json ? command.option("--json", "print JSON for machines instead of tables") : command;
}

/** The options `--large-table` and `--count-cap` set. */
export interface CountingOptions {
  largeTable: number;
  countCap: number;
}

/** Adds `--large-table` and `--count-cap`: when a table's counts are read capped through indexes, and how far. */
export function withCountingOptions(command: Command): Command {
  return command
    .option(
      "--large-table <rows>",
      "a table with about this many rows or more (by its ids) has its counts read through indexes up to --count-cap each",
      positiveInt("--large-table"),
      DEFAULT_COUNTING.largeRows,
    )
    .option(
      "--count-cap <rows>",
      "on a large table, the most rows one count reads; a count that reaches it shows as a lower bound (10,000+)",
      positiveInt("--count-cap"),
      DEFAULT_COUNTING.cap,
    );
}

/** What `withCountingOptions` parsed, as the status read takes it. */
export const countingOf = (options: CountingOptions): StatusCounting => ({ largeRows: options.largeTable, cap: options.countCap });

/** Opens the database, resolves the tables, runs `work`, and closes whatever happens. */
export async function withConsole<T>(
  options: TableOptions,
  work: (console: OperatorConsole) => Promise<T>,
  reading: { readonly expiringWithinMs?: number; readonly counting?: StatusCounting } = {},
): Promise<T> {
  if (options.url === undefined || options.url.length === 0) {
    throw new CliError(ExitCode.usage, "no database URL: pass --url or set SQLINBOX_URL");
  }
  const opened = await openDatabase(options.url);
  try {
    const tables = await resolveTables(opened, {
      module: options.module,
      tables: options.table ?? [],
      advisoryKey: options.advisoryKey,
      fifo: options.fifo,
      deadLetterTable: options.deadLetterTable,
      deadLetterGroup: options.deadLetterGroup,
    });
    return await work(new OperatorConsole(opened, tables, reading.expiringWithinMs, reading.counting));
  } finally {
    await opened.close();
  }
}

/** Prints a value as indented JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`);
}

/** A positive whole number option. */
export function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new CliError(ExitCode.usage, `${name} takes a positive whole number, got "${value}"`);
    return n;
  };
}
