import { isSqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import { checkSchema, dialectFor, type FoundColumn } from "@sqlinbox/kysely-dialects/internal";
import type { RoutePolicy } from "@sqlinbox/dashboard";
import type { DeadLetterPlace } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "./connect.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { createdAtColumn, inferDescription } from "./infer-table.js";
import { loadModule, type DeclaredDeadLetter, type DeclaredLimits, type LoadedModule } from "./load-module.js";

/** A queue table the commands work on: its description, checked against the real table. */
export interface QueueTable {
  readonly spec: InboxDescription;
  /** The real table's columns. */
  readonly found: readonly FoundColumn[];
  /** A created-at column the real table has, for the oldest age. */
  readonly createdAt?: string | undefined;
  /** Where its dead letters sit (one per dead group, or one table). */
  readonly deadLetters: readonly DeadLetterPlace[];
  /** The caps and rate limits the module declares on this table's subscriptions (none without `--module`). */
  readonly limits?: readonly DeclaredLimits[];
  /** The policies the module declares on this table's routes: attempts, timeout, … (none without `--module`). */
  readonly policies?: readonly RoutePolicy[];
}

/** How the command line names the tables. */
export interface TableSelection {
  readonly module?: string | undefined;
  readonly tables: readonly string[];
  readonly advisoryKey?: string | undefined;
  /** With `tables`: the group column is fifo. */
  readonly fifo?: boolean | undefined;
  readonly deadLetterTable?: string | undefined;
  /** `group=deadGroup`. */
  readonly deadLetterGroup?: string | undefined;
}

/**
 * The tables of the selection: the module's descriptions (narrowed by `--table`), or the named
 * tables described from their schema. Each is checked against the real table; a mismatch is exit code 2.
 */
export async function resolveTables(opened: OpenedDatabase, selection: TableSelection): Promise<QueueTable[]> {
  const read = (table: string) => readColumns(opened, table);
  let sources: InboxDescription[];
  let declared: readonly DeclaredDeadLetter[] = [];
  let limits: readonly DeclaredLimits[] = [];
  let policies: LoadedModule["policies"] = [];
  if (selection.module !== undefined) {
    const loaded = await loadModule(selection.module);
    declared = loaded.deadLetters;
    limits = loaded.limits;
    policies = loaded.policies;
    const destinations = new Set(declared.flatMap((d) => ("destination" in d ? [d.destination.table] : [])));
    const all = [...loaded.tables.entries()];
    sources =
      selection.tables.length === 0
        ? all.filter(([, d]) => !destinations.has(d.table)).map(([, d]) => d)
        : selection.tables.map(
            (name) =>
              all.find(([exported, d]) => d.table === name || exported === name)?.[1] ??
              usage(`the module ${selection.module} describes no table "${name}" (it describes ${all.map(([, d]) => d.table).join(", ")})`),
          );
  } else {
    if (selection.tables.length === 0) usage("name the tables: --module ./inbox.ts (their descriptions) or --table <name> (read from the schema)");
    sources = [];
    for (const table of selection.tables) {
      const found = await read(table);
      sources.push(described(() => inferDescription(table, found, selection.advisoryKey, selection.fifo === true)));
    }
  }
  if ((selection.deadLetterTable !== undefined || selection.deadLetterGroup !== undefined) && sources.length !== 1) {
    usage("--dead-letter-table and --dead-letter-group apply to one source table: name it with --table");
  }

  const out: QueueTable[] = [];
  for (const spec of sources) {
    const found = await read(spec.table);
    check(spec, found, opened);
    const places: DeadLetterPlace[] = [];
    for (const d of declared) {
      if (d.source.table !== spec.table) continue;
      if ("destination" in d) {
        check(d.destination, await read(d.destination.table), opened);
        places.push({ kind: "table", destination: d.destination });
      } else places.push({ kind: "group", group: d.group, deadGroup: d.deadGroup });
    }
    if (selection.deadLetterTable !== undefined) {
      const destination = inferDescription(selection.deadLetterTable, await read(selection.deadLetterTable));
      places.push({ kind: "table", destination });
    }
    if (selection.deadLetterGroup !== undefined) {
      const [group, deadGroup] = selection.deadLetterGroup.split("=");
      if (!group || !deadGroup) usage(`--dead-letter-group takes group=deadGroup, such as reports=reports.dead; got "${selection.deadLetterGroup}"`);
      if (spec.group === undefined) usage(`--dead-letter-group needs a group column in "${spec.table}"`);
      places.push({ kind: "group", group: group!, deadGroup: deadGroup! });
    }
    out.push({
      spec,
      found,
      createdAt: createdAtColumn(found),
      deadLetters: places,
      limits: limits.filter((l) => l.table === spec.table),
      policies: policies.filter((p) => p.table === spec.table).map(({ table: _, ...policy }) => policy),
    });
  }
  return out;
}

/** The one table a command works on: the only one, or the one `--table` named. */
export function oneTable(tables: readonly QueueTable[], name?: string): QueueTable {
  if (name !== undefined) return tables.find((t) => t.spec.table === name) ?? usage(`no table "${name}" is selected`);
  if (tables.length === 1) return tables[0]!;
  return usage(`this command works on one table: name it with --table (one of ${tables.map((t) => t.spec.table).join(", ")})`);
}

async function readColumns(opened: OpenedDatabase, table: string): Promise<FoundColumn[]> {
  const dialect = dialectFor(opened.engine);
  const found = dialect.readFoundColumns((await opened.db.executeQuery(dialect.schema.describeTable(table))).rows);
  if (found.length === 0) throw new CliError(ExitCode.cannotConnect, `table "${table}" does not exist in ${opened.server} (database ${opened.database})`);
  return found;
}

function check(spec: InboxDescription, found: readonly FoundColumn[], opened: OpenedDatabase): void {
  try {
    checkSchema(spec, found, opened.engine);
  } catch (error) {
    if (isSqlInboxError(error)) throw new CliError(ExitCode.cannotConnect, `schema mismatch: ${error.message}`, { cause: error });
    throw error;
  }
}

/** A description built from the command line; what it cannot be (fifo without a group column, …) is a usage error. */
function described(build: () => InboxDescription): InboxDescription {
  try {
    return build();
  } catch (error) {
    if (isSqlInboxError(error)) usage(error.message);
    throw error;
  }
}

function usage(message: string): never {
  throw new CliError(ExitCode.usage, message);
}
