import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "../types.js";

/**
 * The advisory key of a row: the table's key template filled from the row's columns,
 * prefixed with the table name (`schema.table` when the description names a schema) so that two
 * tables' keys never meet.
 *
 * @example
 * // template "report-{customer_id}" on table report_jobs
 * advisoryKeyOf(spec, { id: 7, customer_id: "acme" }) // "report_jobs:report-acme"
 */
export function advisoryKeyOf(spec: InboxDescription, row: RawRow): string {
  const key = spec.advisoryKey;
  if (key === undefined) {
    throw new SqlInboxError("UnsupportedForm", "the table has no advisory key template", { table: spec.table });
  }
  let text = "";
  for (const part of key.parts) {
    if ("text" in part) {
      text += part.text;
      continue;
    }
    const value = part.column.name in row ? row[part.column.name] : row[part.column.key];
    if (value === undefined || value === null) {
      throw new SqlInboxError("Declaration", `the advisory key "${key.template}" needs a value for {${part.column.name}}`, {
        table: spec.table,
        column: part.column.name,
      });
    }
    text += value instanceof Date ? value.toISOString() : String(value);
  }
  return `${spec.schema === undefined ? spec.table : `${spec.schema}.${spec.table}`}:${text}`;
}
