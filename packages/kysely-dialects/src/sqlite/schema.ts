import { sql, type CompiledQuery } from "kysely";
import type { SchemaStatements } from "../forms/engine-traits.js";
import type { RawRow } from "../types.js";
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
function describeTable(table: string): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom(sql`pragma_table_info(${table})`.as("c"))
      .select((eb: Eb) => ["name", "type as data_type", eb.lit(null).as("precision"), eb("notnull", "=", eb.lit(0)).as("nullable")])
      .orderBy("cid"),
  );
}

/**
 * The columns the database fills when an insert leaves them out: a default, or the one column of an
 * `INTEGER PRIMARY KEY` (the rowid's alias: declared exactly `INTEGER`, the primary key alone). A
 * `WITHOUT ROWID` table's integer key has no rowid behind it and is not told apart here.
 *
 * ```sql sqlite:schema.filledColumns
 * select "name" from pragma_table_info(?) as "c"
 * where ("dflt_value" is not null
 * or ("pk" = 1 and lower("type") = ? and (select count(*) from pragma_table_info(?) where "pk" > 0) = 1))
 * ```
 */
function filledColumns(table: string): CompiledQuery<{ name: string }> {
  const keyColumns = sql<number>`(select count(*) from pragma_table_info(${table}) where ${sql.ref("pk")} > 0)`;
  return compiled(
    db
      .selectFrom(sql`pragma_table_info(${table})`.as("c"))
      .select("name")
      .where((eb: Eb) =>
        eb.or([eb("dflt_value", "is not", null), eb.and([eb("pk", "=", sql.lit(1)), eb(eb.fn("lower", ["type"]), "=", "integer"), eb(keyColumns, "=", sql.lit(1))])]),
      ),
  );
}

/**
 * The columns a unique index (a primary key or `UNIQUE` constraint's own index included) covers
 * alone, so that `ON CONFLICT (column)` infers it. A partial index and an index of several columns do not count.
 *
 * ```sql sqlite:schema.uniqueColumns
 * select "ii"."name" from pragma_index_list(?) as "il" inner join pragma_index_info("il"."name") as "ii" on true
 * where "il"."unique" = 1 and "il"."partial" = 0 and (select count(*) from pragma_index_info("il"."name")) = 1
 * ```
 * (table-valued pragmas, each taking the table or the index by name).
 */
function uniqueColumns(table: string): CompiledQuery<{ name: string }> {
  const indexColumns = sql<number>`(select count(*) from pragma_index_info(${sql.ref("il.name")}))`;
  return compiled(
    db
      .selectFrom(sql`pragma_index_list(${table})`.as("il"))
      .innerJoin(sql`pragma_index_info(${sql.ref("il.name")})`.as("ii"), (join) => join.onTrue())
      .select("ii.name")
      .where("il.unique", "=", sql.lit(1))
      .where("il.partial", "=", sql.lit(0))
      .where(indexColumns, "=", sql.lit(1)),
  );
}

/** The library's `sqlite_version()`, e.g. `3.45.1`. */
function serverVersion(): CompiledQuery<{ version: string }> {
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
function serverTime(): CompiledQuery<{ now_ms: unknown }> {
  return compiled(db.selectNoFrom(sql<number>`(julianday('now') - 2440587.5) * 86400000.0`.as("now_ms")));
}

/** Always `main`, as a parameter: SQLite has no server-side database name that matters here. */
function currentDatabase(): CompiledQuery<{ name: string }> {
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
  // SQLite cannot alter a column: only a table created with the id as INTEGER PRIMARY KEY has its rowid fill it.
  fillIdAdvice: () => "SQLite cannot add that to a column: recreate the table with the id declared INTEGER PRIMARY KEY, as createInboxTable does",
});

/** No multi-primary cluster to detect. */
const cluster = (): readonly [] => [];

export const sqliteSchema: SchemaStatements = Object.freeze({ describeTable, filledColumns, uniqueColumns, serverVersion, serverTime, currentDatabase, cluster });
