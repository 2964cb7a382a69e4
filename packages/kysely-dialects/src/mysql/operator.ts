import { sql, type CompiledQuery } from "kysely";
import type { OperatorTraits } from "../operator/types.js";
import { compiled } from "../statements/query-db.js";
import { mysqlLockName } from "./lock-name.js";
import { mysqlDb as db } from "./query-builder.js";

/**
 * Each key asked about becomes one row of a derived table (the key and its lock name, joined by
 * `UNION ALL`), and a key comes back when `IS_USED_LOCK` names a session holding its lock (NULL
 * when none does). Lock names are the runtime's (`mysqlLockName`: the database name prefixed,
 * SHA-256 past 64 characters). At least one key: an empty derived table cannot be written.
 */
function heldAdvisoryKeys(keys: readonly string[], database: string): CompiledQuery<{ key: string }> {
  if (keys.length === 0) throw new RangeError("heldAdvisoryKeys: no keys to ask about");
  const rows = sql.join(
    keys.map((key) => sql`select ${key} as ${sql.ref("key")}, ${mysqlLockName(database, key)} as ${sql.ref("lock_name")}`),
    sql` union all `,
  );
  return compiled(
    db
      .selectFrom(sql`(${rows})`.as("k"))
      .select(sql<string>`${sql.ref("k.key")}`.as("key"))
      .where(sql<boolean>`IS_USED_LOCK(${sql.ref("k.lock_name")}) is not null`),
  );
}

/** What the operator tools' statements do differently on MySQL/MariaDB. */
export const mysqlOperator: OperatorTraits = Object.freeze({
  // `GET_LOCK` locks are server-wide: `IS_USED_LOCK` tells whether any session holds one.
  heldAdvisoryKeys,
  // `DEFAULT` is allowed in an UPDATE's SET list.
  attemptDefault: () => sql`default`,
});
