/**
 * @sqlinbox/kysely-dialects — every SQL statement sqlinbox runs, per engine and claim form,
 * compiled by Kysely and never executed here: a description and options in, a `CompiledQuery` out.
 * The root is what an application reads (the dialects and their statement types); the helpers
 * the runtime and the operator tools share live in `./internal`, not covered by semver.
 */
import type { BooleanCapability, Engine, EngineDialect } from "./types.js";
import { type mysqlCapabilities, mysqlDialect } from "./mysql/engine.js";
import { type postgresCapabilities, postgresDialect } from "./postgres/engine.js";
import { type sqliteCapabilities, sqliteDialect } from "./sqlite/engine.js";

export type {
  Engine,
  EngineCapabilities,
  BooleanCapability,
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
  ObserveStatements,
  NotifyStatements,
} from "./types.js";
export type { NotifyingDialect } from "./forms/dialect.js";
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
