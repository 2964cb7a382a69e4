import { SqlInboxError, type ColumnDescription, type InboxDescription } from "@sqlinbox/core/internal";
import type { Engine, FoundColumn, LeaseColumnInfo, RawRow } from "../types.js";

/** Column types that hold a time the way each engine's codec writes it. */
const TIME_TYPES: Record<Engine, (dataType: string) => boolean> = {
  // TIMESTAMP WITHOUT TIME ZONE would drop the offset of the parameter: only the zoned type is exact.
  postgres: (t) => t === "timestamp with time zone" || t === "timestamptz",
  mysql: (t) => t === "datetime" || t === "timestamp",
  // SQLite keeps the fixed-width ISO-8601 text; any type with TEXT affinity (or none) stores it as text.
  sqlite: (t) => t === "" || /char|clob|text/.test(t),
};
const SQLITE_TEXT_PRECISION = 3;

/**
 * Checks the description against the real table (the rows of `describeTable`, normalized
 * by `readFoundColumns`): the table exists, every described column exists, and the lease
 * and retryAfter columns hold time in a form the engine's codec reads back exactly.
 * Returns the lease column's precision (`null` without a lease column).
 *
 * @throws SqlInboxError `Schema`, naming the table and the column.
 */
export function checkSchema(spec: InboxDescription, found: readonly FoundColumn[], engine: Engine): LeaseColumnInfo | null {
  const fail = (message: string, column?: ColumnDescription): never => {
    throw new SqlInboxError("Schema", message, column === undefined ? { table: spec.table } : { table: spec.table, column: column.name });
  };
  if (found.length === 0) fail(`table "${spec.table}" does not exist (or has no columns) in the database the broker connects to`);
  const byName = new Map(found.map((c) => [engine === "postgres" ? c.name : c.name.toLowerCase(), c]));
  const lookup = (col: ColumnDescription): FoundColumn =>
    byName.get(engine === "postgres" ? col.name : col.name.toLowerCase()) ??
    fail(`table "${spec.table}" has no column "${col.name}" (described with the ${col.role} role)`, col);

  for (const col of spec.columns) lookup(col);
  for (const col of [spec.lease, spec.retryAfter]) {
    if (col === undefined) continue;
    const real = lookup(col);
    if (!TIME_TYPES[engine](real.dataType.toLowerCase())) {
      fail(`column "${col.name}" of table "${spec.table}" is ${real.dataType}, which cannot hold a ${col.role} time here: ${expectedTimeType(engine)}`, col);
    }
  }
  if (spec.attempt !== undefined) {
    const real = lookup(spec.attempt);
    if (!/int|numeric|decimal|number/.test(real.dataType.toLowerCase())) {
      fail(`column "${spec.attempt.name}" of table "${spec.table}" is ${real.dataType}: an attempt column holds an integer`, spec.attempt);
    }
  }
  if (spec.lease === undefined) return null;
  const lease = lookup(spec.lease);
  if (engine === "sqlite") return { precision: SQLITE_TEXT_PRECISION };
  return { precision: lease.precision ?? (engine === "postgres" ? 6 : 0) };
}

function expectedTimeType(engine: Engine): string {
  switch (engine) {
    case "postgres":
      return "use TIMESTAMPTZ";
    case "mysql":
      return "use DATETIME(n) (or TIMESTAMP(n))";
    case "sqlite":
      return "use TEXT (sqlinbox writes fixed-width UTC ISO-8601 text)";
  }
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
