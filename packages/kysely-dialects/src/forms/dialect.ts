import type { InboxDescription } from "@sqlinbox/core/internal";
import type { EngineCapabilities, FoundColumn, RawRow, TimeCodec } from "../types.js";
import { controlStatements, type ControlStatements } from "../statements/control.js";
import { workflowStatements, type WorkflowStatements } from "../statements/workflow.js";
import { createTableQueries, type ExtendTable, type TableOptions, type TableStatements } from "../statements/create-table.js";
import { readFoundColumns } from "../shared/schema-check.js";
import { checkVersionFloor } from "../shared/server-version.js";
import { queueDepthQuery, type ObserveStatements } from "../statements/queue-depth.js";
import { advisoryStatements, type AdvisoryStatements } from "./advisory.js";
import { deadLetterStatements, type DeadLetterStatements } from "./dead-letter.js";
import type { EngineTraits, FileWakeStatements, NotifyStatements, SchemaStatements } from "./engine-traits.js";
import { fileWakeStatements } from "./file-wake.js";
import { flowStatements, type FlowStatements } from "./flow.js";
import { jobStatements, type JobStatements } from "./jobs.js";
import { leaseStatements, type LeaseStatements } from "./lease.js";
import { notifyStatements } from "./notify.js";
import { publishStatements, type PublishStatements } from "./publish.js";
import { retentionStatements, type RetentionStatements } from "./retention.js";
import { rowLockStatements, type RowLockStatements } from "./row-lock.js";
import { transactionStatements, type TransactionStatements } from "./transaction.js";

/**
 * Everything one engine provides. Every statement a member builds exists: what the engine or a
 * table lacks is a trait read first (`capabilities`, each group's own), and a statement built
 * against its trait refuses (`UnsupportedForm`, or `Declaration` for what the table lacks).
 */
export interface EngineDialect {
  readonly capabilities: EngineCapabilities;
  readonly time: TimeCodec;
  /** A transaction on a connection the runtime holds itself (a row-lock claim's, an advisory move's). */
  readonly transaction: TransactionStatements;
  /** The row-lock form, where the engine has row locks (`capabilities.rowLock`); on SQLite a row-lock table is `UnsupportedForm`. */
  readonly rowLock: RowLockStatements;
  readonly lease: LeaseStatements;
  readonly advisory: AdvisoryStatements;
  readonly publish: PublishStatements;
  /** The table from its description. */
  readonly table: TableStatements;
  readonly deadLetter: DeadLetterStatements;
  /** Pauses and cancel requests in the control table; a row not in work taken out of its queue. */
  readonly control: ControlStatements;
  /** sqlinbox's own table of workflow runs: their steps' states and results. */
  readonly workflow: WorkflowStatements;
  readonly schema: SchemaStatements;
  readonly observe: ObserveStatements;
  /** Caps on work in progress and rate limits (`InboxQueue.maxInWork`, `InboxQueue.rateLimit`). */
  readonly flow: FlowStatements;
  /** One job's state by id (`broker.job(route, id)`): its row, and whether its form holds it in work. */
  readonly jobs: JobStatements;
  /** Handled rows and dead letters deleted after a window (`InboxQueue.retain`). */
  readonly retention: RetentionStatements;
  /** Waking other processes, where the server relays notifications (`capabilities.listenNotify`); elsewhere they see a publish at their next poll. */
  readonly notify: NotifyStatements;
  /** What a watch of the database file reads (`capabilities.fileWakes`: SQLite); elsewhere each statement refuses. */
  readonly fileWake: FileWakeStatements;
  /** Refuses a server below the floor with `ServerTooOld`, naming both versions. Returns a label such as "MariaDB 10.11.19". */
  checkServerVersion(version: string): string;
  /** True when the driver's error says a table the statement names does not exist (dropped, or never created). */
  missingTable(error: unknown): boolean;
  /**
   * True when the driver's error proves that the failed statement (or commit) wrote nothing: the server
   * answered it with an error and rolled it back, or no connection was ever made. False when the
   * connection was lost while it was on its way (its commit may have happened), or the error says too
   * little to tell. SQLite runs in the process: always true.
   */
  wroteNothing(error: unknown): boolean;
  /** Normalizes the rows of `describeTable`. */
  readFoundColumns(rows: readonly RawRow[]): FoundColumn[];
  /**
   * The OpenTelemetry `db.system.name` of the server `checkServerVersion` labelled (`"postgresql"`,
   * `"mysql"`, `"mariadb"`, `"sqlite"`).
   */
  dbSystemName(serverLabel: string): string;
}

/** The traits each dialect was built from: what this package's other entries (the operator statements, the schema check) read. */
const traitsOfDialect = new WeakMap<EngineDialect, EngineTraits>();

/** The traits `dialect` was built from (a dialect of this package: `dialectFor` hands them out). */
export function traitsOf(dialect: EngineDialect): EngineTraits {
  const traits = traitsOfDialect.get(dialect);
  if (traits === undefined) throw new TypeError("not a dialect of @sqlinbox/kysely-dialects");
  return traits;
}

/**
 * The statements of one engine: each form's builder run once over the engine's traits, so
 * the statements of a call do no engine lookup. Schema reading, time and notifications are the
 * engine's own.
 */
export function buildDialect(engine: EngineTraits): EngineDialect {
  const dialect: EngineDialect = Object.freeze({
    capabilities: engine.capabilities,
    time: engine.time,
    transaction: transactionStatements(engine.capabilities),
    rowLock: rowLockStatements(engine),
    lease: leaseStatements(engine),
    advisory: advisoryStatements(engine),
    publish: publishStatements(engine),
    table: Object.freeze({
      create: (spec: InboxDescription, extend?: ExtendTable, options?: TableOptions) => createTableQueries(engine.statements, engine.tableTypes, spec, extend, options),
    }),
    deadLetter: deadLetterStatements(engine),
    control: controlStatements(engine.statements, engine.tableTypes),
    workflow: workflowStatements(engine.statements, engine.tableTypes, engine.batchDelete),
    schema: engine.schema,
    flow: flowStatements(engine),
    jobs: jobStatements(engine),
    observe: Object.freeze({ queueDepth: (spec: InboxDescription, options: { readonly group?: string }) => queueDepthQuery(engine.statements, spec, options) }),
    notify: notifyStatements(engine),
    fileWake: fileWakeStatements(engine),
    retention: retentionStatements(engine),
    checkServerVersion: (version: string) => checkVersionFloor(engine.versionFloor(version), version),
    missingTable: (error: unknown) => engine.missingTable(error),
    wroteNothing: (error: unknown) => engine.wroteNothing(error),
    readFoundColumns,
    dbSystemName: (serverLabel: string) => engine.dbSystemName(serverLabel),
  });
  traitsOfDialect.set(dialect, engine);
  return dialect;
}
