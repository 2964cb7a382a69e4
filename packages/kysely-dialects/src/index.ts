/**
 * @sqlinbox/kysely-dialects — every SQL statement sqlinbox runs, per engine and claim form,
 * compiled by Kysely and never executed here: a description and options in, a `CompiledQuery` out.
 * The root is what an application reads (the dialects and their statement types); the helpers
 * the runtime and the operator tools share live in `./internal`, not covered by semver.
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
  TransactionStatements,
  LeaseStatements,
  AdvisoryStatements,
  PublishStatements,
  DeadLetterStatements,
  DeadLetterRecord,
  SchemaStatements,
  ClusterVariable,
  ObserveStatements,
  NotifyStatements,
} from "./types.js";
export type { NotifyingDialect } from "./forms/dialect.js";
export { postgresDialect, mysqlDialect, sqliteDialect };

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
