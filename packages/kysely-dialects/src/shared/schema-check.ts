import { SqlInboxError, type ColumnDescription, type InboxDescription } from "@sqlinbox/core/internal";
import type { EngineTraits } from "../forms/engine-traits.js";
import { dedupKeyIndexQuery } from "../statements/create-table.js";
import type { FoundColumn, LeaseColumnInfo, RawRow, TableKeys } from "../types.js";

/**
 * Checks the description against the real table (the rows of `describeTable`, normalized
 * by `readFoundColumns`) by the engine's schema rules: the table exists, every described column exists, and the lease
 * and retryAfter columns hold time in a form the engine's codec reads back exactly. With `keys` (what
 * `filledColumns` and `uniqueColumns` read), also: a generated id is one the database fills, and the
 * dedup key has a unique index of its own; each refusal gives the statement that fixes it where there is one.
 * Returns the lease column's precision (`null` without a lease column).
 *
 * @throws SqlInboxError `Schema`, naming the table and the column.
 */
export function checkTable(
  spec: InboxDescription,
  found: readonly FoundColumn[],
  engine: Pick<EngineTraits, "schemaRules" | "statements">,
  keys?: TableKeys,
): LeaseColumnInfo | null {
  const rules = engine.schemaRules;
  const fail = (message: string, column?: ColumnDescription): never => {
    throw new SqlInboxError("Schema", message, column === undefined ? { table: spec.table } : { table: spec.table, column: column.name });
  };
  if (found.length === 0) {
    fail(
      "the table does not exist (or has no columns) in the database the broker connects to: create it with createInboxTable(db, spec) at startup, or in a migration with the statements inboxTableSql(spec, engine) returns (sqlinbox ddl prints them)",
    );
  }
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
  for (const col of [spec.result, spec.progress]) {
    if (col === undefined) continue;
    const real = lookup(col);
    // The runtime writes JSON text: a JSON type or a text type holds it; bytes, numbers and times do not.
    if (!/json|text|char|clob/.test(real.dataType.toLowerCase())) {
      fail(`column "${col.name}" of table "${spec.table}" is ${real.dataType}: a ${col.role} column holds JSON (a JSON type, or text)`, col);
    }
    if (!real.nullable) fail(`column "${col.name}" of table "${spec.table}" is NOT NULL: a ${col.role} column is empty until a handler writes it, so allow NULL`, col);
  }
  if (keys !== undefined) checkKeys(spec, keys, engine, (col) => lookup(col), fail);
  if (spec.lease === undefined) return null;
  return { precision: rules.leasePrecision(lookup(spec.lease).precision) };
}

/** A generated id the database fills; a dedup key with a unique index of its own. */
function checkKeys(
  spec: InboxDescription,
  keys: TableKeys,
  engine: Pick<EngineTraits, "schemaRules" | "statements">,
  lookup: (col: ColumnDescription) => FoundColumn,
  fail: (message: string, column?: ColumnDescription) => never,
): void {
  const named = (name: string): string => (engine.schemaRules.caseSensitiveNames ? name : name.toLowerCase());
  const has = (names: readonly string[], col: ColumnDescription): boolean => names.some((n) => named(n) === named(col.name));
  if (spec.id.generated && !has(keys.filled, spec.id)) {
    const fix = engine.schemaRules.fillIdAdvice(spec, lookup(spec.id).dataType);
    fail(
      `the id is described .generated(), but the database fills nothing in this column on an insert (no default, identity or auto-increment): ${fix}; or describe the id without .generated() and give each row its id`,
      spec.id,
    );
  }
  if (spec.key !== undefined && !has(keys.unique, spec.key)) {
    const fix = dedupKeyIndexQuery(engine.statements, spec, spec.key).sql;
    fail(`the dedup key has no unique index of its own, so two publishes of one key would both insert a row: run ${fix} (after removing rows that share a key)`, spec.key);
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
