import { isSqlInboxError } from "@sqlinbox/core";
import { controlTableSql, dialectFor, workflowTableSql, inboxTableSql, type Engine, type InboxTableSqlOptions } from "@sqlinbox/kysely-dialects";
import { Command, Option } from "commander";
import { CliError, ExitCode } from "../exit-codes.js";
import { loadModule } from "../load-module.js";

const ENGINES: readonly Engine[] = ["postgres", "mysql", "sqlite"];

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * `sqlinbox ddl`: the statements that create each table a module describes, for a migration.
 * Nothing connects; the output is SQL text, one statement per line, each table under a comment
 * naming its export.
 */
export function ddlCommand(): Command {
  return new Command("ddl")
    .description("print the CREATE TABLE and CREATE INDEX statements of the tables a module describes")
    .option("--module <path>", "a module whose exports are the table descriptions (InboxSpec / defineInbox values)")
    .option("--control", "also (or only) the control table that pause, resume and cancel use (sqlinbox_control)")
    .option("--workflows", "also (or only) the workflow table where workflow runs record their steps (sqlinbox_workflows)")
    .addOption(new Option("--engine <engine>", "the database the statements are for (mysql covers MySQL 8 and MariaDB)").choices([...ENGINES]).makeOptionMandatory())
    .option("--table <name>", "only this table (repeatable); every described table by default", collect)
    .option("--slot-table", "also create sqlinbox_slots (if missing), where maxInWork on a row-lock table and rateLimit count")
    .option("--no-queue-storage", "leave out the storage settings a queue table gets on postgres (fillfactor, autovacuum): the server's own apply")
    .action(async (options: { module?: string; control?: boolean; workflows?: boolean; engine: Engine; table?: string[]; slotTable?: boolean; queueStorage: boolean }) => {
      if (options.module === undefined && options.control !== true && options.workflows !== true)
        throw new CliError(ExitCode.usage, "name what to print: --module <path> (its tables), --control (the control table), --workflows (the workflow table), or several");
      const blocks = [];
      if (options.module !== undefined) {
        // `--no-queue-storage`: none; else each engine's defaults.
        const tableOptions: InboxTableSqlOptions = { slotTable: options.slotTable === true, queueStorage: options.queueStorage ? undefined : false };
        blocks.push(await ddlText(options.module, options.engine, options.table ?? [], tableOptions));
      }
      if (options.control === true) blocks.push(controlDdlText(options.engine));
      if (options.workflows === true)
        blocks.push(
          `-- the workflow table (workflow runs and their steps)\n${workflowTableSql(options.engine)
            .map((s) => `${s};\n`)
            .join("")}`,
        );
      process.stdout.write(blocks.join("\n"));
    });
}

/** The control table's statement, as the command prints it. */
function controlDdlText(engine: Engine): string {
  return `-- the control table (pause, resume, cancel)\n${controlTableSql(engine)
    .map((s) => `${s};\n`)
    .join("")}`;
}

/** The statements of every table the module exports (or of `only`), as the command prints them; `queueStorage` as `inboxTableSql` takes it. */
async function ddlText(module: string, engine: Engine, only: readonly string[], options: InboxTableSqlOptions = {}): Promise<string> {
  const { tables } = await loadModule(module);
  const chosen = [...tables].filter(([, d]) => only.length === 0 || only.includes(d.table));
  const missing = only.filter((name) => !chosen.some(([, d]) => d.table === name));
  if (missing.length > 0) {
    throw new CliError(
      ExitCode.usage,
      `the module ${module} describes no table ${missing.map((n) => `"${n}"`).join(", ")}: it describes ${[...tables.values()].map((d) => `"${d.table}"`).join(", ")}`,
    );
  }
  const blocks = chosen.map(([name, description]) => {
    let statements: string[];
    try {
      statements = inboxTableSql(description, engine, { queueStorage: options.queueStorage });
    } catch (error) {
      if (isSqlInboxError(error)) throw new CliError(ExitCode.usage, `${name}: ${error.message}`, { cause: error });
      throw error;
    }
    return `-- ${name}: ${description.table}\n${statements.map((s) => `${s};\n`).join("")}`;
  });
  // Once per schema the chosen tables live in (`IF NOT EXISTS`: safe beside any earlier migration).
  if (options.slotTable === true) {
    const schemas = [...new Set(chosen.map(([, d]) => d.schema))];
    for (const schema of schemas) {
      blocks.push(`-- sqlinbox_slots: where maxInWork (row lock) and rateLimit count\n${dialectFor(engine).flow.createSlotTable(schema).sql};\n`);
    }
  }
  return blocks.join("\n");
}
