import { sql, type CompiledQuery } from "kysely";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { OperatorTraits } from "../operator/types.js";
import type { RawRow } from "../types.js";
import { compiled } from "../statements/query-db.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * One array parameter holds every key asked about; a key comes back when a granted advisory
 * lock of this database matches it:
 * ```sql postgres:operator.heldAdvisoryKeys
 * select "key" as "key" from unnest(cast($1 as text[])) as "key"
 * where exists (select 1 as "one" from "pg_locks" as "l"
 *   where l.locktype = 'advisory' and l.granted and l.objsubid = 1
 *   and l.database = (select oid from pg_database where datname = current_database())
 *   and ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended("key", 0))
 * ```
 * `pg_advisory_lock(bigint)` files the key's high half under `classid` and the low half under
 * `objid` (`objsubid = 1`); joining them back gives the `hashtextextended` value the runtime locked.
 */
function heldAdvisoryKeys(keys: readonly string[]): CompiledQuery<{ key: string }> {
  return compiled(
    db
      .selectFrom(sql`unnest(cast(${[...keys]} as text[]))`.as("key"))
      .select(sql<string>`"key"`.as("key"))
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom("pg_locks as l")
            .select(sql.lit(1).as("one"))
            .where(sql<boolean>`l.locktype = 'advisory' and l.granted and l.objsubid = 1`)
            .where(sql<boolean>`l.database = (select oid from pg_database where datname = current_database())`)
            .where(sql<boolean>`((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended("key", 0)`),
        ),
      ),
  );
}

/**
 * The id's sequence (a serial or identity column owns one), read without advancing it:
 * ```sql postgres:operator.idHighWater
 * select pg_get_serial_sequence($1, $2) is not null as "known",
 *   pg_sequence_last_value(pg_get_serial_sequence($3, $4)::regclass) as "high_water"
 * ```
 * `known` is false when no sequence owns the column; `high_water` is NULL before the first id.
 */
function idHighWater(spec: InboxDescription): CompiledQuery<RawRow> {
  // The table argument is parsed as SQL text: quote each part, as `tableRef` names it.
  const table = (spec.schema === undefined ? [spec.table] : [spec.schema, spec.table]).map((part) => `"${part.replaceAll('"', '""')}"`).join(".");
  const column = spec.id.name;
  return compiled(
    db.selectNoFrom([
      sql<boolean>`pg_get_serial_sequence(${table}, ${column}) is not null`.as("known"),
      sql<string>`pg_sequence_last_value(pg_get_serial_sequence(${table}, ${column})::regclass)`.as("high_water"),
    ]),
  );
}

/** What the operator tools' statements do differently on PostgreSQL. */
export const postgresOperator: OperatorTraits = Object.freeze({
  // Session advisory locks are listed in `pg_locks`, under the key's hash.
  heldAdvisoryKeys: (keys: readonly string[]) => heldAdvisoryKeys(keys),
  // `DEFAULT` is allowed in an UPDATE's SET list.
  attemptDefault: () => sql`default`,
  // A serial or identity id's sequence keeps its last value when the table drains.
  idHighWater,
});
