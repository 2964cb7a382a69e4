/**
 * @sqlinbox/kysely-dialects — every SQL statement sqlinbox runs, per engine and claim form,
 * compiled by Kysely and never executed here: a description and options in, a `CompiledQuery` out.
 * The root is what an application reads (the dialects and their statement types); the helpers
 * the runtime and the operator tools share live in `./internal`, not covered by semver.
 */
import type { AnyInboxSpec, InboxDescription } from "@sqlinbox/core/internal";
import type { BooleanCapability, Engine } from "./types.js";
import type { EngineDialect } from "./forms/dialect.js";
import type { TableOptions } from "./statements/create-table.js";
import { type mysqlCapabilities, mysqlDialect } from "./mysql/engine.js";
import { type postgresCapabilities, postgresDialect } from "./postgres/engine.js";
import { type sqliteCapabilities, sqliteDialect } from "./sqlite/engine.js";

export type {
  Engine,
  EngineCapabilities,
  BooleanCapability,
  RawRow,
  HeldLease,
  LeaseColumnInfo,
  FoundColumn,
  TableKeys,
  TimeCodec,
  ClaimOptions,
  LeaseClaimOptions,
} from "./types.js";
export type { EngineDialect } from "./forms/dialect.js";
export type { RowLockStatements } from "./forms/row-lock.js";
export type { TransactionStatements } from "./forms/transaction.js";
export type { LeaseStatements } from "./forms/lease.js";
export type { AdvisoryStatements } from "./forms/advisory.js";
export type { PublishStatements } from "./forms/publish.js";
export type { DeadLetterStatements } from "./forms/dead-letter.js";
export type { DeadLetterRecord } from "./statements/dead-letter.js";
export type { FlowStatements } from "./forms/flow.js";
export type { JobStatements } from "./forms/jobs.js";
export type { DeadLetterListFilter, JobListFilter, JobListRows, PayloadSearch } from "./statements/job-list.js";
export type { RetentionStatements } from "./forms/retention.js";
export type { PruneOptions } from "./statements/retention.js";
export type { SlotPlace, RateSlotPick } from "./statements/slots.js";
export type { FileWakeStatements, LockWaitTraits, NotifyStatements, SchemaStatements, ClusterVariable } from "./forms/engine-traits.js";
export type { ControlStatements, ControlRow } from "./statements/control.js";
export type { WorkflowStatements, WorkflowRow, WorkflowChange, PruneRunsOptions } from "./statements/workflow.js";
export type { ObserveStatements } from "./statements/queue-depth.js";
export type { TableStatements, ExtendTable, TableOptions, QueueStorage } from "./statements/create-table.js";
export { postgresDialect, mysqlDialect, sqliteDialect };

/** The one table from an engine's name to the engine: everything else that names an engine goes through `dialectFor`. */
const dialects: Readonly<Record<Engine, EngineDialect>> = Object.freeze({
  postgres: postgresDialect,
  mysql: mysqlDialect,
  sqlite: sqliteDialect,
});

/** The same engines' capabilities as types, read from each `engine.ts`: what type rules ask of an engine. */
export interface EngineCapabilityMap {
  readonly postgres: typeof postgresCapabilities;
  readonly mysql: typeof mysqlCapabilities;
  readonly sqlite: typeof sqliteCapabilities;
}

/**
 * Whether the engines `E` have capability `C`, at the type level: `true` or `false` when every
 * engine of `E` agrees, `boolean` when they differ (`E` is a union, or `Engine` itself).
 *
 * @example
 * type NoRowLocks = EngineSupports<"sqlite", "rowLock">; // false
 * type Unknown = EngineSupports<Engine, "listenNotify">; // boolean
 */
export type EngineSupports<E extends Engine, C extends BooleanCapability> = EngineCapabilityMap[E][C];

/**
 * The statements of one engine.
 *
 * @example
 * const dialect = dialectFor("sqlite");
 * dialect.capabilities.rowLock // false
 */
export function dialectFor(engine: Engine): EngineDialect {
  const dialect = dialects[engine];
  if (dialect === undefined) throw new TypeError(`unknown engine: ${String(engine)}`);
  return dialect;
}

/**
 * The statements that create a description's table on `engine`, for a migration written by hand:
 * `CREATE TABLE` with every role typed for the engine, then the claim index and the dedup key's
 * unique index. A data column needs a type in its description (`.type("bigint")`); to add one
 * some other way, use `createInboxTable`'s callback in `@sqlinbox/runtime`.
 *
 * The reports' lease table on PostgreSQL (one statement: it has no role an index serves), with the
 * storage settings of a table that churns (`queueStorage`; MySQL/MariaDB and SQLite have none):
 * ```sql postgres:table.create(reports)
 * create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null,
 *   "locked_until" timestamptz, "payload" bytea not null) with (fillfactor = 70,
 *   autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0)
 * ```
 * With `{ queueStorage: false }`, the server's own settings:
 * ```sql postgres:table.create(reports, queueStorage false)
 * create table "report_jobs" ("id" bigserial primary key, "attempt" integer default 1 not null,
 *   "locked_until" timestamptz, "payload" bytea not null)
 * ```
 * A grouped table with priority, retryAfter and processedAt gets its claim index; on MySQL/MariaDB,
 * with no partial index, processedAt leads it:
 * ```sql mysql:table.create(rich lease, index)
 * create index `jobs_claim` on `jobs` (`grp`, `processed_at`, `priority`, `retry_after`, `id`)
 * ```
 *
 * @example
 * for (const statement of inboxTableSql(RenderReport, "postgres")) await sql.raw(statement).execute(db);
 */
export function inboxTableSql(spec: AnyInboxSpec | InboxDescription, engine: Engine, options: InboxTableSqlOptions = {}): string[] {
  const description = "description" in spec ? spec.description : spec;
  const dialect = dialectFor(engine);
  const statements = dialect.table.create(description, undefined, options).map((q) => q.sql);
  if (options.slotTable === true) statements.push(dialect.flow.createSlotTable(description.schema).sql);
  return statements;
}

/** What `inboxTableSql` adds to the queue table's statements, and its storage settings (`TableOptions.queueStorage`). */
export interface InboxTableSqlOptions extends TableOptions {
  /**
   * Also `CREATE TABLE IF NOT EXISTS sqlinbox_slots` (in the table's schema), where
   * `InboxQueue.rateLimit` and a row-lock table's `InboxQueue.maxInWork` are counted.
   */
  readonly slotTable?: boolean;
}

/**
 * The statements that create the control table (`sqlinbox_control`) on `engine`, for a migration:
 * the table where `pause`, `resume` and `cancel` leave what every app reads once per poll interval.
 * An app that never pauses or cancels does not need it.
 *
 * @example
 * for (const statement of controlTableSql("postgres")) await sql.raw(statement).execute(db);
 */
export function controlTableSql(engine: Engine): string[] {
  return dialectFor(engine)
    .control.create()
    .map((q) => q.sql);
}

/**
 * The statements that create sqlinbox's workflow table (`sqlinbox_workflows`) on `engine`, for a
 * migration: the table where each workflow run records its steps (waiting, released, done, failed)
 * and the results of its done steps, with the index an ack finds its step through. An app that runs
 * no workflow does not need it.
 *
 * @example
 * for (const statement of workflowTableSql("postgres")) await sql.raw(statement).execute(db);
 */
export function workflowTableSql(engine: Engine): string[] {
  return dialectFor(engine)
    .workflow.create()
    .map((q) => q.sql);
}
