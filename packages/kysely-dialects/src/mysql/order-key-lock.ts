import { sql, type Expression, type SqlBool } from "kysely";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { OrderKeyLockTraits } from "../forms/engine-traits.js";
import { compiled, type Eb } from "../statements/query-db.js";
import { mysqlDb as db } from "./query-builder.js";

/**
 * MySQL/MariaDB hold an order key with a user lock, `GET_LOCK(name, 0)`: 1 taken, 0 held by another
 * session. The name is the SHA-256 (64 hex characters, the most `GET_LOCK` takes on MySQL) of the
 * database (the description's schema, else the connection's), the table, the slot and the key as the
 * server writes it, so every process names a key alike and two databases on one server never meet.
 * Two keys whose names collide share a lock (SHA-256: never in practice).
 *
 * A user lock belongs to the session, not the transaction: `release` (`RELEASE_ALL_LOCKS()`) gives
 * every one of them back before the transaction ends, before its connection goes back to the pool;
 * a session that dies gives them back by itself. A row-lock transaction's connection holds no other
 * user lock (the advisory form holds sessions of its own).
 *
 * @example
 * ```sql mysql:rowLock.lockOrderKeys(ordered)
 * select `ledger_jobs`.`id` as `id`, case when GET_LOCK(sha2(concat_ws('|', database(), ?, `ledger_jobs`.`account_id`), 256), 0) = 1 then 0 end as `order_slot`
 *   from `ledger_jobs` where `ledger_jobs`.`id` in (?)
 * ```
 * ```sql mysql:rowLock.releaseOrderKeys
 * select RELEASE_ALL_LOCKS() as `released`
 * ```
 */
export const mysqlOrderKeyLocks: OrderKeyLockTraits = Object.freeze({
  tryLock(eb: Eb, spec: InboxDescription, key: Expression<unknown>, slot: number): Expression<SqlBool> {
    const database = spec.schema === undefined ? eb.fn("database", []) : eb.val(spec.schema);
    const name = eb.fn("sha2", [eb.fn("concat_ws", [sql.lit("|"), database, eb.val(`sqlinbox order key ${spec.table}#${slot}`), key]), sql.lit(256)]);
    return eb(eb.fn("GET_LOCK", [name, sql.lit(0)]), "=", sql.lit(1));
  },
  release: compiled(db.selectNoFrom((eb) => eb.fn("RELEASE_ALL_LOCKS", []).as("released"))),
});
