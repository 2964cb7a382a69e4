import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { dialectFor, type EngineDialect, type ExtendTable, type TableOptions } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, Kysely } from "kysely";
import { engineOfKysely } from "../drivers/engine-of-kysely.js";
import { schemaUnsupported } from "../errors.js";

/**
 * Creates a description's table on the application's Kysely instance, unless it exists: every
 * role's column typed for the engine (taken from the instance's dialect), data columns from their
 * declared type, the index the claims walk and the dedup key's unique index. Resolves to `true`
 * when it created the table, `false` when the table was there already (made by hand, by a
 * migration, or by another process starting at the same time) — which the startup check then reads.
 *
 * `extend` receives Kysely's own `CreateTableBuilder`: add the columns a description leaves
 * untyped, or columns of the application's own. A data column with no type that `extend` does
 * not add is refused before anything runs, naming the column.
 *
 * On Postgres and SQLite the statements run in one transaction (their DDL is transactional), or
 * in the caller's when `db` is one; MySQL/MariaDB commit each one.
 *
 * @example
 * await createInboxTable(db, RenderReport, (t) => t.addColumn("tenant_id", "uuid", (c) => c.notNull()));
 *
 * With `{ slotTable: true }` it also creates sqlinbox's own `sqlinbox_slots` (if missing, in the
 * table's schema), where `InboxQueue.rateLimit` and a row-lock table's `InboxQueue.maxInWork` count.
 *
 * On Postgres the queue table gets the storage settings of a table that churns (`fillfactor = 70`,
 * autovacuum early and unthrottled); `{ queueStorage: false }` leaves them out, a record replaces
 * them (`TableOptions.queueStorage`). A table that exists already keeps its own.
 *
 * @throws SqlInboxError `Declaration` for a data column with no type; `UnsupportedForm` for a
 * schema on SQLite or a Kysely dialect sqlinbox does not speak.
 */
export async function createInboxTable<DB>(db: Kysely<DB>, spec: AnyInboxSpec, extend?: ExtendTable, options: CreateInboxTableOptions = {}): Promise<boolean> {
  const anyDb = db as unknown as Kysely<unknown>;
  const engine = engineOfKysely(anyDb);
  const dialect = dialectFor(engine);
  const description = spec.description;
  if (description.schema !== undefined && !dialect.capabilities.tableSchemas) throw schemaUnsupported(engine, description.schema, description.table);
  const statements = dialect.table.create(description, extend, options);
  // `IF NOT EXISTS`: every queue table's migration may ask for it, and a queue table made earlier may gain a limit later.
  if (options.slotTable === true) await anyDb.executeQuery(dialect.flow.createSlotTable(description.schema));
  if (await tableExists(anyDb, dialect, spec)) return false;
  let done = 0;
  const run = async (on: Kysely<unknown>) => {
    for (const statement of statements) {
      await on.executeQuery(statement as CompiledQuery<unknown>);
      done += 1;
    }
  };
  try {
    // Inside the caller's transaction the statements join it; elsewhere they share one where DDL is transactional.
    if (anyDb.isTransaction || !anyDb.getExecutor().adapter.supportsTransactionalDdl) await run(anyDb);
    else await anyDb.transaction().execute(run);
    return true;
  } catch (error) {
    // The CREATE TABLE itself failed and the table is there now: another process created it
    // meanwhile, which is what the caller asked for. A later statement's failure is the caller's to see.
    if (done === 0 && (await tableExists(anyDb, dialect, spec))) return false;
    throw error;
  }
}

async function tableExists(db: Kysely<unknown>, dialect: EngineDialect, spec: AnyInboxSpec): Promise<boolean> {
  const { rows } = await db.executeQuery(dialect.schema.describeTable(spec.description.table, spec.description.schema));
  return rows.length > 0;
}

/** What `createInboxTable` creates beside the queue table, and the queue table's storage settings (`TableOptions.queueStorage`). */
export interface CreateInboxTableOptions extends TableOptions {
  /**
   * Also `sqlinbox_slots` (if missing), where `InboxQueue.rateLimit` and a row-lock table's
   * `InboxQueue.maxInWork` are counted across processes.
   */
  readonly slotTable?: boolean;
}

/**
 * Creates the control table (`sqlinbox_control`) unless it exists: where `broker.pause`, `resume`
 * and `cancel` (and `sqlinbox pause`, `resume`, `cancel`) leave what every app reads once per poll
 * interval, and where `app.cron` marks the ticks it publishes to a table whose ack deletes the row (so
 * that a late process does not publish a handled tick again). An app that does neither does not need it. For a migration written by hand,
 * `controlTableSql(engine)` gives the statement.
 *
 * @example
 * await createControlTable(db);
 */
export async function createControlTable<DB>(db: Kysely<DB>): Promise<void> {
  const anyDb = db as unknown as Kysely<unknown>;
  const dialect = dialectFor(engineOfKysely(anyDb));
  for (const statement of dialect.control.create()) await anyDb.executeQuery(statement as CompiledQuery<unknown>);
}

/**
 * Creates sqlinbox's workflow table (`sqlinbox_workflows`) and its index unless they exist: where each
 * workflow run (`broker.startWorkflow`) records its steps — waiting, released, done, failed — and the
 * results of its done steps, written in the transactions of the steps' acks. For a migration written
 * by hand, `workflowTableSql(engine)` gives the statements (`sqlinbox ddl --workflows` prints them).
 *
 * @example
 * await createWorkflowTable(db);
 */
export async function createWorkflowTable<DB>(db: Kysely<DB>): Promise<void> {
  const anyDb = db as unknown as Kysely<unknown>;
  const dialect = dialectFor(engineOfKysely(anyDb));
  for (const statement of dialect.workflow.create()) await anyDb.executeQuery(statement as CompiledQuery<unknown>);
}
