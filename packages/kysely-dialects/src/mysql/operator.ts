import { sql, type CompiledQuery } from "kysely";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { OperatorTraits } from "../operator/types.js";
import type { RawRow } from "../types.js";
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

/**
 * The table's next auto-increment value, less one:
 * ```sql mysql:operator.idHighWater
 * select `auto_increment` is not null as `known`, `auto_increment` - 1 as `high_water`
 * from `information_schema`.`tables` where `table_schema` = coalesce(?, database()) and `table_name` = ?
 * ```
 * `known` is false without an auto-increment column. MariaDB reads the value from the table
 * itself; MySQL 8 caches it for `information_schema_stats_expiry` seconds (set it to 0).
 */
function idHighWater(spec: InboxDescription): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom("information_schema.tables")
      .select([sql<number>`${sql.ref("auto_increment")} is not null`.as("known"), sql<string>`${sql.ref("auto_increment")} - 1`.as("high_water")])
      .where(sql<boolean>`${sql.ref("table_schema")} = coalesce(${spec.schema ?? null}, database())`)
      .where("table_name", "=", spec.table),
  );
}

/** What the operator tools' statements do differently on MySQL/MariaDB. */
export const mysqlOperator: OperatorTraits = Object.freeze({
  // `GET_LOCK` locks are server-wide: `IS_USED_LOCK` tells whether any session holds one.
  heldAdvisoryKeys,
  // `DEFAULT` is allowed in an UPDATE's SET list.
  attemptDefault: () => sql`default`,
  // The auto-increment counter keeps its value when the table drains.
  idHighWater,
});
