import type { CompiledQuery } from "kysely";
import type { SessionLockStatements } from "../forms/engine-traits.js";
import { mysqlLockName } from "./lock-name.js";
import { compiled } from "../statements/query-db.js";
import { mysqlDb as db } from "./query-builder.js";

/**
 * User locks held by the session, `GET_LOCK(name, 0)`: taken without waiting, 1 taken, 0 held
 * elsewhere. User locks are server-wide, so the name is the database and the key
 * (`mysqlLockName`), replaced by its SHA-256 hex past 64 characters.
 *
 * @example
 * ```sql mysql:advisory.tryLock
 * select GET_LOCK(?, 0) as `locked`
 * ```
 * ```sql mysql:advisory.unlock
 * select RELEASE_LOCK(?) as `unlocked`
 * ```
 */
export const mysqlSessionLocks: SessionLockStatements = Object.freeze({
  tryLock(key: string, database: string): CompiledQuery<{ locked: unknown }> {
    return compiled(db.selectNoFrom((eb) => eb.fn("GET_LOCK", [eb.val(mysqlLockName(database, key)), eb.lit(0)]).as("locked")));
  },
  unlock(key: string, database: string): CompiledQuery {
    return compiled(db.selectNoFrom((eb) => eb.fn("RELEASE_LOCK", [eb.val(mysqlLockName(database, key))]).as("unlocked")));
  },
});
