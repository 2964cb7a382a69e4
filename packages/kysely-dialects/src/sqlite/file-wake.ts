import { sql } from "kysely";
import type { FileWakeStatements } from "../forms/engine-traits.js";
import { compiled, type Eb } from "../statements/query-db.js";
import { sqliteDb as db } from "./query-builder.js";

/**
 * What a watch of a SQLite database file reads: the file's path (`pragma_database_list`; empty for
 * `:memory:`), and the connection's data version (`pragma_data_version`), which another connection's
 * commit changes and this connection's own do not. Table-valued pragmas have no Kysely builder: raw
 * fragments, with the schema name as a parameter.
 *
 * ```sql sqlite:fileWake.databaseFile
 * select "file" from pragma_database_list as "d" where "name" = ?
 * ```
 * ```sql sqlite:fileWake.dataVersion
 * select "data_version" from pragma_data_version as "v"
 * ```
 */
export const sqliteFileWake: FileWakeStatements = Object.freeze({
  databaseFile: () =>
    compiled(
      db
        .selectFrom(sql`pragma_database_list`.as("d"))
        .select("file")
        .where((eb: Eb) => eb("name", "=", "main")),
    ),
  dataVersion: () => compiled(db.selectFrom(sql`pragma_data_version`.as("v")).select("data_version")),
});
