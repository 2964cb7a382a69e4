import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type Expression } from "kysely";
import type { OperatorTraits } from "../operator/types.js";

/**
 * SQLite has no `DEFAULT` in an UPDATE's SET list: the attempt column's declared default is read
 * from `pragma_table_info` (`coalesce(…, 0)` when it has none).
 */
function attemptDefault(spec: InboxDescription): Expression<unknown> {
  const column = spec.attempt?.name ?? "attempt";
  return sql`(select coalesce(cast(dflt_value as integer), 0) from pragma_table_info(${spec.table}) where name = ${column})`;
}

/** What the operator tools' statements do differently on SQLite. */
export const sqliteOperator: OperatorTraits = Object.freeze({
  // Advisory keys live in the application's process: nothing outside it can see them.
  heldAdvisoryKeys: "process registry",
  // No `DEFAULT` in an UPDATE's SET list: the declared default, read from the table's pragma.
  attemptDefault,
});
