import { sql, type CompiledQuery } from "kysely";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { SchemaStatements } from "../forms/engine-traits.js";
import type { RawRow } from "../types.js";
import type { SchemaRules } from "../forms/engine-traits.js";
import { compiled, type Eb, tableRef } from "../statements/query-db.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * The table's columns from `information_schema`, in the current schema, or in `schema` when the
 * description names one (then `"table_schema" = $1`).
 *
 * ```sql postgres:schema.describeTable
 * select "column_name" as "name", "data_type", "datetime_precision" as "precision", "is_nullable" as "nullable"
 * from "information_schema"."columns" where "table_schema" = current_schema() and "table_name" = $1 order by "ordinal_position"
 * ```
 */
function describeTable(table: string, schema?: string): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom("information_schema.columns")
      .select(["column_name as name", "data_type", "datetime_precision as precision", "is_nullable as nullable"])
      .where("table_schema", "=", (eb: Eb) => (schema === undefined ? eb.fn("current_schema", []) : eb.val(schema)))
      .where("table_name", "=", table)
      .orderBy("ordinal_position"),
  );
}

/**
 * The columns the database fills when an insert leaves them out: a default (a sequence's `nextval`
 * included), an identity, a generated column.
 *
 * ```sql postgres:schema.filledColumns
 * select "column_name" as "name" from "information_schema"."columns"
 * where "table_schema" = current_schema() and "table_name" = $1
 * and ("column_default" is not null or "is_identity" = $2 or "is_generated" = $3)
 * ```
 */
function filledColumns(table: string, schema?: string): CompiledQuery<{ name: string }> {
  return compiled(
    db
      .selectFrom("information_schema.columns")
      .select("column_name as name")
      .where("table_schema", "=", (eb: Eb) => (schema === undefined ? eb.fn("current_schema", []) : eb.val(schema)))
      .where("table_name", "=", table)
      .where((eb: Eb) => eb.or([eb("column_default", "is not", null), eb("is_identity", "=", "YES"), eb("is_generated", "=", "ALWAYS")])),
  );
}

/**
 * The columns a unique index (a primary key, a unique constraint) covers alone, so that an insert of
 * a value one of them holds conflicts on it (`ON CONFLICT (column)` infers that index). A partial
 * index, an expression index, an index of several columns and a deferrable one do not count:
 * `ON CONFLICT (column)` cannot use them. `pg_index`, as `information_schema` shows no index.
 *
 * ```sql postgres:schema.uniqueColumns
 * select "a"."attname" as "name" from "pg_catalog"."pg_index" as "i"
 * inner join "pg_catalog"."pg_class" as "t" on "t"."oid" = "i"."indrelid"
 * inner join "pg_catalog"."pg_namespace" as "n" on "n"."oid" = "t"."relnamespace"
 * inner join "pg_catalog"."pg_attribute" as "a" on "a"."attrelid" = "t"."oid" and "a"."attnum" = "i"."indkey"[0]
 * where "n"."nspname" = current_schema() and "t"."relname" = $1
 * and "i"."indisunique" and "i"."indimmediate" and "i"."indnkeyatts" = 1 and "i"."indpred" is null
 * ```
 */
function uniqueColumns(table: string, schema?: string): CompiledQuery<{ name: string }> {
  return compiled(
    db
      .selectFrom("pg_catalog.pg_index as i")
      .innerJoin("pg_catalog.pg_class as t", "t.oid", "i.indrelid")
      .innerJoin("pg_catalog.pg_namespace as n", "n.oid", "t.relnamespace")
      // `indkey` is an int2vector: its first element is the index's one column (0 for an expression).
      .innerJoin("pg_catalog.pg_attribute as a", (join) => join.onRef("a.attrelid", "=", "t.oid").on(sql<boolean>`${sql.ref("a.attnum")} = ${sql.ref("i.indkey")}[0]`))
      .select("a.attname as name")
      .where("n.nspname", "=", (eb: Eb) => (schema === undefined ? eb.fn("current_schema", []) : eb.val(schema)))
      .where("t.relname", "=", table)
      .where(sql<boolean>`${sql.ref("i.indisunique")} and ${sql.ref("i.indimmediate")}`)
      .where("i.indnkeyatts", "=", sql.lit(1))
      .where("i.indpred", "is", null),
  );
}

/** The server's `server_version` setting, e.g. `15.20 (Debian 15.20-0+deb12u1)`. */
function serverVersion(): CompiledQuery<{ version: string }> {
  return compiled(db.selectNoFrom((eb) => eb.fn<string>("current_setting", [eb.val("server_version")]).as("version")));
}

/**
 * The server's clock as epoch milliseconds: `clock_timestamp()` (the time of this call, not of the
 * transaction's start, which `now()` would give).
 *
 * ```sql postgres:schema.serverTime
 * select (extract(epoch from clock_timestamp()) * 1000)::float8 as "now_ms"
 * ```
 */
function serverTime(): CompiledQuery<{ now_ms: unknown }> {
  return compiled(db.selectNoFrom(sql<number>`(extract(epoch from clock_timestamp()) * 1000)::float8`.as("now_ms")));
}

/** The current schema. */
function currentDatabase(): CompiledQuery<{ name: string }> {
  return compiled(db.selectNoFrom((eb) => eb.fn<string>("current_schema", []).as("name")));
}

/** Reading a Postgres table against a description. */
export const postgresSchemaRules: SchemaRules = Object.freeze({
  // A quoted identifier keeps its case.
  caseSensitiveNames: true,
  // TIMESTAMP WITHOUT TIME ZONE would drop the offset of the parameter: only the zoned type is exact.
  holdsTime: (t: string) => t === "timestamp with time zone" || t === "timestamptz",
  timeTypeAdvice: "use TIMESTAMPTZ",
  leasePrecision: (reported: number | null) => reported ?? 6,
  // An identity fills an integer column; another type needs a default (gen_random_uuid() for a uuid).
  fillIdAdvice: (spec: InboxDescription, dataType: string) =>
    /^(smallint|integer|bigint)$/.test(dataType.toLowerCase())
      ? `run ${sql`alter table ${sql.table(tableRef(spec))} alter column ${sql.ref(spec.id.name)} add generated by default as identity`.compile(db).sql}`
      : `give the ${dataType} column a default the database fills (such as gen_random_uuid() for a uuid)`,
});

/** No multi-primary cluster to detect. */
const cluster = (): readonly [] => [];

export const postgresSchema: SchemaStatements = Object.freeze({ describeTable, filledColumns, uniqueColumns, serverVersion, serverTime, currentDatabase, cluster });
