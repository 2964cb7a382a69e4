import { CompiledQuery } from "kysely";
import type { EngineCapabilities } from "../types.js";

/**
 * Opening and ending a transaction on a connection the caller holds: the statements Kysely's
 * `startTransaction()` sends. `begin` sets `capabilities.claimIsolation` first where there is one
 * (MySQL/MariaDB: `set transaction isolation level read committed`, for the next transaction only).
 */
export interface TransactionStatements {
  readonly begin: readonly CompiledQuery[];
  readonly commit: CompiledQuery;
  readonly rollback: CompiledQuery;
}

/**
 * A transaction the runtime opens on a connection it holds, with the statements Kysely's drivers
 * send for `startTransaction()`: `begin`, after `set transaction isolation level …` where the
 * engine's claims ask for one (MySQL/MariaDB: READ COMMITTED, for the next transaction only).
 */
export function transactionStatements(capabilities: EngineCapabilities): TransactionStatements {
  const isolation = capabilities.claimIsolation;
  return Object.freeze({
    begin: Object.freeze(isolation === undefined ? [CompiledQuery.raw("begin")] : [CompiledQuery.raw(`set transaction isolation level ${isolation}`), CompiledQuery.raw("begin")]),
    commit: CompiledQuery.raw("commit"),
    rollback: CompiledQuery.raw("rollback"),
  });
}

/** A transaction's end statement as every Kysely driver sends it: `CompiledQuery.raw("commit")` or `"rollback"`. */
const END_STATEMENT = /^\s*(?:commit|rollback)\s*;?\s*$/i;

/**
 * Whether `query` ends a transaction: the COMMIT or ROLLBACK a Kysely driver sends for
 * `transaction().execute(…)` and a `ControlledTransaction` alike (and this package's own
 * `commit`/`rollback`), on every engine.
 *
 * @example
 * endsTransaction(CompiledQuery.raw("commit")) // true
 * endsTransaction(CompiledQuery.raw("select 1")) // false
 */
export function endsTransaction(query: CompiledQuery): boolean {
  return END_STATEMENT.test(query.sql);
}
