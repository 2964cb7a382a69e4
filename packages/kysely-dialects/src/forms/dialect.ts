import type { InboxDescription } from "@sqlinbox/core/internal";
import type { EngineDialect, ExtendTable, NotifyStatements, TableOptions } from "../types.js";
import { controlStatements } from "../statements/control.js";
import { createTableQueries } from "../statements/create-table.js";
import { readFoundColumns } from "../shared/schema-check.js";
import { checkVersionFloor } from "../shared/server-version.js";
import { advisoryStatements } from "./advisory.js";
import { deadLetterStatements } from "./dead-letter.js";
import type { EngineTraits } from "./engine-traits.js";
import { leaseStatements } from "./lease.js";
import { publishStatements } from "./publish.js";
import { queueDepthQuery } from "../statements/queue-depth.js";
import { rowLockStatements } from "./row-lock.js";
import { transactionStatements } from "./transaction.js";
import { flowStatements } from "./flow.js";

/** A dialect whose `notify` group is known to be there (Postgres). */
export type NotifyingDialect = EngineDialect & { readonly notify: NotifyStatements };

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
export function buildDialect(engine: EngineTraits & { readonly notify: NotifyStatements }): NotifyingDialect;
export function buildDialect(engine: EngineTraits): EngineDialect;
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
    schema: engine.schema,
    flow: flowStatements(engine),
    observe: Object.freeze({ queueDepth: (spec: InboxDescription, options: { readonly group?: string }) => queueDepthQuery(engine.statements, spec, options) }),
    notify: engine.notify,
    checkServerVersion: (version: string) => checkVersionFloor(engine.versionFloor(version), version),
    missingTable: (error: unknown) => engine.missingTable(error),
    readFoundColumns,
    dbSystemName: (serverLabel: string) => engine.dbSystemName(serverLabel),
  });
  traitsOfDialect.set(dialect, engine);
  return dialect;
}
