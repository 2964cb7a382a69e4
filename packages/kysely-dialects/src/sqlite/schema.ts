import { sql, type CompiledQuery } from "kysely";
import type { RawRow, SchemaStatements } from "../types.js";
import type { SchemaRules } from "../forms/engine-traits.js";
import { compiled, type Eb } from "../statements/query-db.js";
import { sqliteDb as db } from "./query-builder.js";

/**
 * The table's columns from the `table_info` pragma.
 *
 * ```sql sqlite:schema.describeTable
 * select "name", "type" as "data_type", null as "precision", "notnull" = 0 as "nullable"
 * from pragma_table_info(?) as "c" order by "cid"
 * ```
 * (a table-valued pragma has no Kysely builder: the raw fragment takes the table as a parameter).
 */
export function describeTable(table: string): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom(sql`pragma_table_info(${table})`.as("c"))
      .select((eb: Eb) => ["name", "type as data_type", eb.lit(null).as("precision"), eb("notnull", "=", eb.lit(0)).as("nullable")])
      .orderBy("cid"),
  );
}

/** The library's `sqlite_version()`, e.g. `3.45.1`. */
export function serverVersion(): CompiledQuery<{ version: string }> {
  return compiled(db.selectNoFrom((eb) => eb.fn<string>("sqlite_version", []).as("version")));
}

/** Always `main`, as a parameter: SQLite has no server-side database name that matters here. */
export function currentDatabase(): CompiledQuery<{ name: string }> {
  return compiled(db.selectNoFrom((eb) => eb.val("main").as("name")));
}

/** Reading a SQLite table against a description. */
export const sqliteSchemaRules: SchemaRules = Object.freeze({
  // Column names are case-insensitive.
  caseSensitiveNames: false,
  // The codec writes fixed-width ISO-8601 text; any type with TEXT affinity (or none) stores it as text.
  holdsTime: (t: string) => t === "" || /char|clob|text/.test(t),
  timeTypeAdvice: "use TEXT (sqlinbox writes fixed-width UTC ISO-8601 text)",
  // The text keeps milliseconds, whatever the declared type says.
  leasePrecision: () => 3,
});

/** No multi-primary cluster to detect. */
const cluster = (): readonly [] => [];

export const sqliteSchema: SchemaStatements = Object.freeze({ describeTable, serverVersion, currentDatabase, cluster });
