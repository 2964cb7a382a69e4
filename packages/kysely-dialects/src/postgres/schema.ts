import type { CompiledQuery } from "kysely";
import type { RawRow, SchemaStatements } from "../types.js";
import { compiled, type Eb } from "../statements/query-db.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * The table's columns from `information_schema`, in the current schema.
 *
 * ```sql postgres:schema.describeTable
 * select "column_name" as "name", "data_type", "datetime_precision" as "precision", "is_nullable" as "nullable"
 * from "information_schema"."columns" where "table_schema" = current_schema() and "table_name" = $1 order by "ordinal_position"
 * ```
 */
export function describeTable(table: string): CompiledQuery<RawRow> {
  return compiled(
    db
      .selectFrom("information_schema.columns")
      .select(["column_name as name", "data_type", "datetime_precision as precision", "is_nullable as nullable"])
      .where("table_schema", "=", (eb: Eb) => eb.fn("current_schema", []))
      .where("table_name", "=", table)
      .orderBy("ordinal_position"),
  );
}

/** The server's `server_version` setting, e.g. `15.20 (Debian 15.20-0+deb12u1)`. */
export function serverVersion(): CompiledQuery<{ version: string }> {
  return compiled(db.selectNoFrom((eb) => eb.fn<string>("current_setting", [eb.val("server_version")]).as("version")));
}

/** The current schema. */
export function currentDatabase(): CompiledQuery<{ name: string }> {
  return compiled(db.selectNoFrom((eb) => eb.fn<string>("current_schema", []).as("name")));
}

export const postgresSchema: SchemaStatements = Object.freeze({ describeTable, serverVersion, currentDatabase });
