import { sql, type CompiledQuery } from "kysely";
import { mysqlLockName } from "../../mysql/lock-name.js";
import { compiled } from "../../statements/query-db.js";
import { mysqlEngine } from "../../mysql/engine.js";

const ctx = mysqlEngine.statements;
import type { OperatorEngine } from "../types.js";

/**
 * Each key asked about becomes one row of a derived table (the key and its lock name, joined by
 * `UNION ALL`), and a key comes back when `IS_USED_LOCK` names a session holding its lock (NULL
 * when none does). Lock names are the runtime's (`mysqlLockName`: the database name prefixed,
 * SHA-256 past 64 characters). `null` for no keys: an empty derived table cannot be written.
 */
export function heldAdvisoryKeys(keys: readonly string[], database: string): CompiledQuery<{ key: string }> | null {
  if (keys.length === 0) return null;
  const rows = sql.join(
    keys.map((key) => sql`select ${key} as ${sql.ref("key")}, ${mysqlLockName(database, key)} as ${sql.ref("lock_name")}`),
    sql` union all `,
  );
  return compiled(
    ctx.db
      .selectFrom(sql`(${rows})`.as("k"))
      .select(sql<string>`${sql.ref("k.key")}`.as("key"))
      .where(sql<boolean>`IS_USED_LOCK(${sql.ref("k.lock_name")}) is not null`),
  );
}

export const mysqlOperator: OperatorEngine = Object.freeze({
  heldAdvisoryKeys,
  // `DEFAULT` is allowed in an UPDATE's SET list.
  attemptDefault: () => sql`default`,
  rowLocks: true,
});
