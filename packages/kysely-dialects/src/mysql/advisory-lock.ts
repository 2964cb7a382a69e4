import type { CompiledQuery } from "kysely";
import type { SessionLockStatements } from "../forms/engine-traits.js";
import type { RawRow } from "../types.js";
import { KeyListShape } from "../shared/key-list-shape.js";
import { mysqlLockName } from "./lock-name.js";
import { compiled } from "../statements/query-db.js";
import { mysqlDb as db } from "./query-builder.js";

/** A batch's lock names, one call each (`GET_LOCK(?, 0) as \`i\``, `RELEASE_LOCK(?) as \`i\``); the names are the parameters. */
const tryLockShape = new KeyListShape((names) => compiled<RawRow>(db.selectNoFrom((eb) => names.map((name, i) => eb.fn("GET_LOCK", [eb.val(name), eb.lit(0)]).as(String(i))))));
const unlockShape = new KeyListShape((names) => compiled<RawRow>(db.selectNoFrom((eb) => names.map((name, i) => eb.fn("RELEASE_LOCK", [eb.val(name)]).as(String(i))))));

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
 *
 * A batch claim tries its keys in one statement, one column per key: a session holds any number of
 * user locks at once (MySQL 5.7.5+, MariaDB 10.0.2+; before, a second `GET_LOCK` released the first),
 * and each is released on its own or with the session. A name locked twice by one session is
 * counted twice, so the keys of one statement are distinct (the claim tries one row per key).
 * ```sql mysql:advisory.tryLockMany(two keys)
 * select GET_LOCK(?, 0) as `0`, GET_LOCK(?, 0) as `1`
 * ```
 * ```sql mysql:advisory.unlockMany(two keys)
 * select RELEASE_LOCK(?) as `0`, RELEASE_LOCK(?) as `1`
 * ```
 */
export const mysqlSessionLocks: SessionLockStatements = Object.freeze({
  tryLock(key: string, database: string): CompiledQuery<{ locked: unknown }> {
    return compiled(db.selectNoFrom((eb) => eb.fn("GET_LOCK", [eb.val(mysqlLockName(database, key)), eb.lit(0)]).as("locked")));
  },
  unlock(key: string, database: string): CompiledQuery {
    return compiled(db.selectNoFrom((eb) => eb.fn("RELEASE_LOCK", [eb.val(mysqlLockName(database, key))]).as("unlocked")));
  },
  tryLockMany: (keys: readonly string[], database: string): CompiledQuery<RawRow> =>
    tryLockShape.of(
      keys,
      keys.map((key) => mysqlLockName(database, key)),
    ),
  unlockMany: (keys: readonly string[], database: string): CompiledQuery<RawRow> =>
    unlockShape.of(
      keys,
      keys.map((key) => mysqlLockName(database, key)),
    ),
});
