import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { compiled, type StatementContext } from "./query-db.js";
import { tableRef } from "./table-ref.js";

/**
 * One multi-row insert of new rows, returning the new ids where the engine has
 * `INSERT … RETURNING` (MySQL reads `insertId` instead). Values are keyed by column name (or row
 * key) and already encoded; generated columns are left out even when given, so the database
 * fills them; a key that names no described column is refused.
 */
export function insertQuery(ctx: StatementContext, spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> {
  if (rows.length === 0) throw new SqlInboxError("Declaration", "a publish needs at least one row", { table: spec.table });
  const values = rows.map((row) => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(row)) {
      const column = spec.columns.find((c) => c.name === key) ?? spec.columns.find((c) => c.key === key);
      if (column === undefined) {
        throw new SqlInboxError("Declaration", `a published row names "${key}", which is not a described column`, { table: spec.table, column: key });
      }
      if (!column.generated && value !== undefined) out[column.name] = value;
    }
    return out;
  });
  const empty = values.every((v) => Object.keys(v).length === 0);
  if (empty && values.length > 1) {
    throw new SqlInboxError("Declaration", "rows with only generated columns are published one at a time", { table: spec.table });
  }
  const insert = empty ? ctx.db.insertInto(tableRef(spec)).defaultValues() : ctx.db.insertInto(tableRef(spec)).values(values);
  return ctx.capabilities.insertReturning ? compiled(insert.returning(spec.id.name)) : compiled(insert);
}
