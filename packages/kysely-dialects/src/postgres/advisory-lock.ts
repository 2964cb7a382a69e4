import type { CompiledQuery } from "kysely";
import type { SessionLockStatements } from "../forms/engine-traits.js";
import { compiled } from "../statements/query-db.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * Session locks on the key's 64-bit hash, `hashtextextended(key, 0)` (Postgres 11+), taken
 * without waiting. Advisory locks are per database, so `database` is not needed. They need a
 * session of their own: a direct connection, or PgBouncer in session mode.
 *
 * @example
 * ```sql postgres:advisory.tryLock
 * select pg_try_advisory_lock(hashtextextended($1, 0)) as "locked"
 * ```
 * ```sql postgres:advisory.unlock
 * select pg_advisory_unlock(hashtextextended($1, 0)) as "unlocked"
 * ```
 */
export const postgresSessionLocks: SessionLockStatements = Object.freeze({
  tryLock(key: string): CompiledQuery<{ locked: unknown }> {
    return compiled(db.selectNoFrom((eb) => eb.fn("pg_try_advisory_lock", [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as("locked")));
  },
  unlock(key: string): CompiledQuery {
    return compiled(db.selectNoFrom((eb) => eb.fn("pg_advisory_unlock", [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as("unlocked")));
  },
});
