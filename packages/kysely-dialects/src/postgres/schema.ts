import { sql, type CompiledQuery } from "kysely";
import type { RawRow, SchemaStatements } from "../types.js";
import type { SchemaRules } from "../forms/engine-traits.js";
import { compiled, type Eb } from "../statements/query-db.js";
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
export function describeTable(table: string, schema?: string): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom("information_schema.columns")
      .select(["column_name as name", "data_type", "datetime_precision as precision", "is_nullable as nullable"])
      .where("table_schema", "=", (eb: Eb) => (schema === undefined ? eb.fn("current_schema", []) : eb.val(schema)))
      .where("table_name", "=", table)
      .orderBy("ordinal_position"),
  );
}

/** The server's `server_version` setting, e.g. `15.20 (Debian 15.20-0+deb12u1)`. */
export function serverVersion(): CompiledQuery<{ version: string }> {
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
export function serverTime(): CompiledQuery<{ now_ms: unknown }> {
  return compiled(db.selectNoFrom(sql<number>`(extract(epoch from clock_timestamp()) * 1000)::float8`.as("now_ms")));
}

/** The current schema. */
export function currentDatabase(): CompiledQuery<{ name: string }> {
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
});

/** No multi-primary cluster to detect. */
const cluster = (): readonly [] => [];

export const postgresSchema: SchemaStatements = Object.freeze({ describeTable, serverVersion, serverTime, currentDatabase, cluster });
