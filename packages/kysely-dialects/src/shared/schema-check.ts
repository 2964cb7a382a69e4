import { SqlInboxError, type ColumnDescription, type InboxDescription } from "@sqlinbox/core/internal";
import type { SchemaRules } from "../forms/engine-traits.js";
import type { FoundColumn, LeaseColumnInfo, RawRow } from "../types.js";

/**
 * Checks the description against the real table (the rows of `describeTable`, normalized
 * by `readFoundColumns`) by the engine's schema rules: the table exists, every described column exists, and the lease
 * and retryAfter columns hold time in a form the engine's codec reads back exactly.
 * Returns the lease column's precision (`null` without a lease column).
 *
 * @throws SqlInboxError `Schema`, naming the table and the column.
 */
export function checkTable(spec: InboxDescription, found: readonly FoundColumn[], rules: SchemaRules): LeaseColumnInfo | null {
  const fail = (message: string, column?: ColumnDescription): never => {
    throw new SqlInboxError("Schema", message, column === undefined ? { table: spec.table } : { table: spec.table, column: column.name });
  };
  if (found.length === 0) fail(`table "${spec.table}" does not exist (or has no columns) in the database the broker connects to`);
  const named = (name: string): string => (rules.caseSensitiveNames ? name : name.toLowerCase());
  const byName = new Map(found.map((c) => [named(c.name), c]));
  const lookup = (col: ColumnDescription): FoundColumn =>
    byName.get(named(col.name)) ?? fail(`table "${spec.table}" has no column "${col.name}" (described with the ${col.role} role)`, col);

  for (const col of spec.columns) lookup(col);
  for (const col of [spec.lease, spec.retryAfter]) {
    if (col === undefined) continue;
    const real = lookup(col);
    if (!rules.holdsTime(real.dataType.toLowerCase())) {
      fail(`column "${col.name}" of table "${spec.table}" is ${real.dataType}, which cannot hold a ${col.role} time here: ${rules.timeTypeAdvice}`, col);
    }
  }
  if (spec.attempt !== undefined) {
    const real = lookup(spec.attempt);
    if (!/int|numeric|decimal|number/.test(real.dataType.toLowerCase())) {
      fail(`column "${spec.attempt.name}" of table "${spec.table}" is ${real.dataType}: an attempt column holds an integer`, spec.attempt);
    }
  }
  if (spec.lease === undefined) return null;
  return { precision: rules.leasePrecision(lookup(spec.lease).precision) };
}

/** Normalizes the rows of a `describeTable` statement (every engine returns the same aliases). */
export function readFoundColumns(rows: readonly RawRow[]): FoundColumn[] {
  return rows.map((row) => {
    const precision = row["precision"];
    const nullable = row["nullable"];
    return {
      name: String(row["name"]),
      dataType: String(row["data_type"] ?? ""),
      precision: precision === null || precision === undefined ? null : Number(precision),
      nullable: nullable === true || nullable === 1 || nullable === "1" || String(nullable).toUpperCase() === "YES",
    };
  });
}
