import { sql, type CompiledQuery } from "kysely";
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { ClusterVariable, SchemaStatements } from "../forms/engine-traits.js";
import type { RawRow } from "../types.js";
import type { SchemaRules } from "../forms/engine-traits.js";
import { compiled, type Eb, tableRef } from "../statements/query-db.js";
import { mysqlDb as db } from "./query-builder.js";

/**
 * The table's columns from `information_schema`, in the current database, or in `schema` when the
 * description names one (then `TABLE_SCHEMA = ?`).
 *
 * ```sql mysql:schema.describeTable
 * select `COLUMN_NAME` as `name`, `DATA_TYPE` as `data_type`, `DATETIME_PRECISION` as `precision`, `IS_NULLABLE` as `nullable`
 * from `information_schema`.`COLUMNS` where `TABLE_SCHEMA` = database() and `TABLE_NAME` = ? order by `ORDINAL_POSITION`
 * ```
 */
function describeTable(table: string, schema?: string): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom("information_schema.COLUMNS")
      .select(["COLUMN_NAME as name", "DATA_TYPE as data_type", "DATETIME_PRECISION as precision", "IS_NULLABLE as nullable"])
      .where("TABLE_SCHEMA", "=", (eb: Eb) => (schema === undefined ? eb.fn("database", []) : eb.val(schema)))
      .where("TABLE_NAME", "=", table)
      .orderBy("ORDINAL_POSITION"),
  );
}

/**
 * The columns the database fills when an insert leaves them out: an auto-increment, a generated
 * column, a default (MariaDB shows a column without one as SQL `NULL`, one with `DEFAULT NULL` as the text `NULL`).
 *
 * ```sql mysql:schema.filledColumns
 * select `COLUMN_NAME` as `name` from `information_schema`.`COLUMNS`
 * where `TABLE_SCHEMA` = database() and `TABLE_NAME` = ?
 * and (`EXTRA` like ? or `EXTRA` like ? or (`COLUMN_DEFAULT` is not null and `COLUMN_DEFAULT` <> ?))
 * ```
 */
function filledColumns(table: string, schema?: string): CompiledQuery<{ name: string }> {
  return compiled(
    db
      .selectFrom("information_schema.COLUMNS")
      .select("COLUMN_NAME as name")
      .where("TABLE_SCHEMA", "=", (eb: Eb) => (schema === undefined ? eb.fn("database", []) : eb.val(schema)))
      .where("TABLE_NAME", "=", table)
      .where((eb: Eb) =>
        eb.or([eb("EXTRA", "like", "%auto_increment%"), eb("EXTRA", "like", "%generated%"), eb.and([eb("COLUMN_DEFAULT", "is not", null), eb("COLUMN_DEFAULT", "<>", "NULL")])]),
      ),
  );
}

/**
 * The columns a unique index (the primary key included) covers alone: an insert of a value one of
 * them holds fails with a duplicate-key error (1062). An index of several columns does not count.
 *
 * ```sql mysql:schema.uniqueColumns
 * select min(`COLUMN_NAME`) as `name` from `information_schema`.`STATISTICS`
 * where `TABLE_SCHEMA` = database() and `TABLE_NAME` = ? and `NON_UNIQUE` = 0
 * group by `INDEX_NAME` having count(*) = 1
 * ```
 */
function uniqueColumns(table: string, schema?: string): CompiledQuery<{ name: string }> {
  return compiled(
    db
      .selectFrom("information_schema.STATISTICS")
      .select((eb: Eb) => eb.fn.min("COLUMN_NAME").as("name"))
      .where("TABLE_SCHEMA", "=", (eb: Eb) => (schema === undefined ? eb.fn("database", []) : eb.val(schema)))
      .where("TABLE_NAME", "=", table)
      .where("NON_UNIQUE", "=", sql.lit(0))
      .groupBy("INDEX_NAME")
      .having((eb: Eb) => eb(eb.fn.countAll(), "=", sql.lit(1))),
  );
}

/**
 * The server's `version()`, e.g. `8.0.36` or `10.11.19-MariaDB-0+deb12u1`, and a `DATETIME` as
 * the pool reads one back: text (`dateStrings: true`) or a `Date`.
 */
function serverVersion(): CompiledQuery<{ version: string; time_probe: unknown }> {
  return compiled(db.selectNoFrom((eb) => [eb.fn<string>("version", []).as("version"), sql<unknown>`cast('2000-01-01 00:00:00' as datetime)`.as("time_probe")]));
}

/**
 * The server's clock as epoch milliseconds, from `UTC_TIMESTAMP(6)`: a difference of two `DATETIME`s,
 * so neither the session's `time_zone` nor a daylight-saving change moves it (`UNIX_TIMESTAMP(NOW())`
 * reads `NOW()` in the session's zone). A decimal: `mysql2` returns it as text.
 *
 * ```sql mysql:schema.serverTime
 * select timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(6)) / 1000 as `now_ms`
 * ```
 */
function serverTime(): CompiledQuery<{ now_ms: unknown }> {
  return compiled(db.selectNoFrom(sql<unknown>`timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(6)) / 1000`.as("now_ms")));
}

/** The current `database()`: the prefix of lock names. */
function currentDatabase(): CompiledQuery<{ name: string }> {
  return compiled(db.selectNoFrom((eb) => eb.fn<string>("database", []).as("name")));
}

/**
 * Galera's switches: `wsrep_on` (a global variable; `OFF` on a MariaDB that is no cluster node, and
 * absent on MySQL) and the nodes in the cluster now (a status; `0` when not connected).
 *
 * ```sql mysql:schema.cluster[0]
 * SHOW GLOBAL VARIABLES LIKE 'wsrep_on'
 * ```
 * ```sql mysql:schema.cluster[1]
 * SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'
 * ```
 */
function cluster(): readonly CompiledQuery<ClusterVariable>[] {
  return [sql<ClusterVariable>`SHOW GLOBAL VARIABLES LIKE 'wsrep_on'`.compile(db), sql<ClusterVariable>`SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'`.compile(db)];
}

/** Reading a MySQL/MariaDB table against a description. */
export const mysqlSchemaRules: SchemaRules = Object.freeze({
  // Column names are case-insensitive.
  caseSensitiveNames: false,
  // The codec writes UTC text; TIMESTAMP holds it too in a session whose time_zone is +00:00.
  holdsTime: (t: string) => t === "datetime" || t === "timestamp",
  timeTypeAdvice: "use DATETIME(n) (or TIMESTAMP(n))",
  // DATETIME without (n) keeps whole seconds.
  leasePrecision: (reported: number | null) => reported ?? 0,
  // AUTO_INCREMENT fits an integer key column, and starts past the largest id already there; another type needs a default.
  fillIdAdvice: (spec: InboxDescription, dataType: string) =>
    /^(tinyint|smallint|mediumint|int|integer|bigint)$/.test(dataType.toLowerCase())
      ? `run ${
          db.schema
            .alterTable(tableRef(spec))
            .modifyColumn(spec.id.name, sql.raw(dataType.toLowerCase()), (c) => c.notNull().autoIncrement())
            .compile().sql
        }`
      : `give the ${dataType} column a default the database fills (such as (uuid()))`,
});

export const mysqlSchema: SchemaStatements = Object.freeze({ describeTable, filledColumns, uniqueColumns, serverVersion, serverTime, currentDatabase, cluster });
