import type { CompiledQuery } from "kysely";
import type { SessionLockStatements } from "../forms/engine-traits.js";
import type { RawRow } from "../types.js";
import { KeyListShape } from "../shared/key-list-shape.js";
import { compiled } from "../statements/query-db.js";
import { postgresDb as db } from "./query-builder.js";

/** A batch's keys, one function call each: `fn(hashtextextended($i, 0)) as "i"`. */
const keyCalls = (fn: string) => (keys: readonly string[]) =>
  compiled<RawRow>(db.selectNoFrom((eb) => keys.map((key, i) => eb.fn(fn, [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as(String(i)))));
const tryLockShape = new KeyListShape(keyCalls("pg_try_advisory_lock"));
const unlockShape = new KeyListShape(keyCalls("pg_advisory_unlock"));

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
 *
 * A batch claim tries its keys in one statement, one column per key. The keys are the batch's
 * candidates, chosen before the statement (the first row of each key not in work here), so every
 * call of the lock function is wanted: there is no row for a filter or a `LIMIT` to discard after
 * its lock was taken (`EXPLAIN VERBOSE` shows a bare `Result` whose output list is the calls).
 * ```sql postgres:advisory.tryLockMany(two keys)
 * select pg_try_advisory_lock(hashtextextended($1, 0)) as "0", pg_try_advisory_lock(hashtextextended($2, 0)) as "1"
 * ```
 * ```sql postgres:advisory.unlockMany(two keys)
 * select pg_advisory_unlock(hashtextextended($1, 0)) as "0", pg_advisory_unlock(hashtextextended($2, 0)) as "1"
 * ```
 */
export const postgresSessionLocks: SessionLockStatements = Object.freeze({
  tryLock(key: string): CompiledQuery<{ locked: unknown }> {
    return compiled(db.selectNoFrom((eb) => eb.fn("pg_try_advisory_lock", [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as("locked")));
  },
  unlock(key: string): CompiledQuery {
    return compiled(db.selectNoFrom((eb) => eb.fn("pg_advisory_unlock", [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as("unlocked")));
  },
  tryLockMany: (keys: readonly string[]): CompiledQuery<RawRow> => tryLockShape.of(keys, keys),
  unlockMany: (keys: readonly string[]): CompiledQuery<RawRow> => unlockShape.of(keys, keys),
});
