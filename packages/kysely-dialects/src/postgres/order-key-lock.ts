import { createHash } from "node:crypto";
import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type Expression, type SqlBool } from "kysely";
import type { OrderKeyLockTraits } from "../forms/engine-traits.js";
import { type Eb, tableRef } from "../statements/query-db.js";

/**
 * The lock class of an order key's slot on one table: a 32-bit number from the table's name and the
 * slot, so two tables' keys (and a key's slots) never meet. The two-number form of the advisory lock
 * functions is a lock space of its own: the advisory form's one-number keys (`hashtextextended`)
 * never meet these.
 */
function orderKeyLockClass(spec: InboxDescription, slot: number): number {
  return createHash("sha256")
    .update(`sqlinbox order key ${tableRef(spec)}#${slot}`, "utf8")
    .digest()
    .readInt32BE(0);
}

/**
 * Postgres holds an order key in the claim's transaction, `pg_try_advisory_xact_lock(class, hashtext(key::text))`:
 * the lock ends with the transaction (commit, rollback, a lost session), so nothing gives it back.
 * The key's text is the server's (`::text` of the column), the same in every process. Two keys whose
 * `hashtext` is equal share a lock: they run one after the other, never side by side beyond `perKey`.
 *
 * @example
 * ```sql postgres:rowLock.lockOrderKeys(ordered)
 * select "ledger_jobs"."id" as "id", case when pg_try_advisory_xact_lock(1754607304, hashtext(cast("ledger_jobs"."account_id" as text))) then 0 end as "order_slot"
 *   from "ledger_jobs" where "ledger_jobs"."id" in ($1)
 * ```
 */
export const postgresOrderKeyLocks: OrderKeyLockTraits = Object.freeze({
  tryLock: (eb: Eb, spec: InboxDescription, key: Expression<unknown>, slot: number): Expression<SqlBool> =>
    eb.fn<SqlBool>("pg_try_advisory_xact_lock", [sql.lit(orderKeyLockClass(spec, slot)), eb.fn("hashtext", [eb.cast(key, "text")])]),
  release: "with the transaction",
});
