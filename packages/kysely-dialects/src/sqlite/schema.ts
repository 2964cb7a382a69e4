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

/**
 * The operating system's clock as epoch milliseconds (`julianday('now')` counts days from noon,
 * 4714 BC; 2440587.5 of them is the Unix epoch): every process sharing the file reads it.
 *
 * ```sql sqlite:schema.serverTime
 * select (julianday('now') - 2440587.5) * 86400000.0 as "now_ms"
 * ```
 */
export function serverTime(): CompiledQuery<{ now_ms: unknown }> {
  return compiled(db.selectNoFrom(sql<number>`(julianday('now') - 2440587.5) * 86400000.0`.as("now_ms")));
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

export const sqliteSchema: SchemaStatements = Object.freeze({ describeTable, serverVersion, serverTime, currentDatabase, cluster });
