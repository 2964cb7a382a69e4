import { createHash } from "node:crypto";
import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "../types.js";

/**
 * The advisory key of a row: the table's key template filled from the row's columns,
 * prefixed with the table name so that two tables' keys never meet.
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
  return `${spec.table}:${text}`;
}

/** The longest name `GET_LOCK` accepts on MySQL (MariaDB accepts more; the same rule keeps both alike). */
export const MYSQL_LOCK_NAME_MAX = 64;

/**
 * The `GET_LOCK` name of a key: prefixed with the database name (user locks are
 * server-wide, so two databases on one server must not share them), and replaced by its
 * SHA-256 in hex (exactly 64 characters) when longer than MySQL's 64.
 *
 * @example
 * mysqlLockName("app", "report_jobs:7") // "app.report_jobs:7"
 */
export function mysqlLockName(database: string, key: string): string {
  const name = `${database}.${key}`;
  if ([...name].length <= MYSQL_LOCK_NAME_MAX) return name;
  return createHash("sha256").update(name, "utf8").digest("hex");
}
