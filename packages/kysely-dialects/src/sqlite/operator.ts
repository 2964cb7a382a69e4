import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type Expression } from "kysely";
import { compiled } from "../statements/query-db.js";
import type { RawRow } from "../types.js";
import { sqliteDb } from "./query-builder.js";
import type { OperatorTraits } from "../operator/types.js";

/**
 * SQLite has no `DEFAULT` in an UPDATE's SET list: the attempt column's declared default is read
 * from `pragma_table_info` (`coalesce(…, 0)` when it has none).
 */
function attemptDefault(spec: InboxDescription): Expression<unknown> {
  const column = spec.attempt?.name ?? "attempt";
  return sql`(select coalesce(cast(dflt_value as integer), 0) from pragma_table_info(${spec.table}) where name = ${column})`;
}

/**
 * An AUTOINCREMENT table's last id, from `sqlite_sequence` (a plain INTEGER PRIMARY KEY hands a
 * drained table's ids out again, so it has no high-water mark):
 * ```sql sqlite:operator.idHighWater
 * select (select sql like '%autoincrement%' from sqlite_master where type = 'table' and name = ?) as "known",
 *   (select seq from sqlite_sequence where name = ?) as "high_water"
 * ```
 * The statement fails when no table of the database is AUTOINCREMENT (there is no `sqlite_sequence`).
 */
function idHighWater(spec: InboxDescription): CompiledQuery<RawRow> {
  return compiled(
    sqliteDb.selectNoFrom([
      sql<number>`(select sql like '%autoincrement%' from sqlite_master where type = 'table' and name = ${spec.table})`.as("known"),
      sql<string>`(select seq from sqlite_sequence where name = ${spec.table})`.as("high_water"),
    ]),
  );
}

/** What the operator tools' statements do differently on SQLite. */
export const sqliteOperator: OperatorTraits = Object.freeze({
  // Advisory keys live in the application's process: nothing outside it can see them.
  heldAdvisoryKeys: "process registry",
  // No `DEFAULT` in an UPDATE's SET list: the declared default, read from the table's pragma.
  attemptDefault,
  // AUTOINCREMENT ids: `sqlite_sequence` keeps the last one when the table drains.
  idHighWater,
});
