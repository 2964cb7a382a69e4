import { CompiledQuery } from "kysely";
import type { EngineCapabilities, TransactionStatements } from "../types.js";

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
