/**
 * @sqlinbox/kysely-dialects — every SQL statement sqlinbox runs, per engine and claim form,
 * compiled by Kysely and never executed here: a description and options in, a `CompiledQuery` out.
 */
import type { Engine, EngineDialect } from "./types.js";
import { mysqlDialect } from "./mysql/engine.js";
import { postgresDialect } from "./postgres/engine.js";
import { sqliteDialect } from "./sqlite/engine.js";

export type {
  Engine,
  EngineCapabilities,
  EngineDialect,
  RawRow,
  HeldLease,
  LeaseColumnInfo,
  FoundColumn,
  TimeCodec,
  ClaimOptions,
  LeaseClaimOptions,
  RowLockStatements,
  LeaseStatements,
  AdvisoryStatements,
  PublishStatements,
  DeadLetterStatements,
  DeadLetterRecord,
  SchemaStatements,
  NotifyStatements,
} from "./types.js";
export type { NotifyingDialect } from "./forms/dialect.js";
export { postgresDialect, mysqlDialect, sqliteDialect };
export { advisoryKeyOf } from "./shared/advisory-key.js";
export { mysqlLockName, MYSQL_LOCK_NAME_MAX } from "./mysql/lock-name.js";
export { checkSchema, readFoundColumns } from "./shared/schema-check.js";
export { checkServerVersion, VERSION_FLOORS } from "./shared/server-version.js";
export { truncateToPrecision, formatUtcText, parseUtcText } from "./shared/time-text.js";

const dialects: Readonly<Record<Engine, EngineDialect>> = Object.freeze({
  postgres: postgresDialect,
  mysql: mysqlDialect,
  sqlite: sqliteDialect,
});

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
