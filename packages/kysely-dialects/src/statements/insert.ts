import { SqlInboxError, type InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { COMPARE_PRECISION, compiled, type StatementContext, tableRef } from "./query-db.js";

/**
 * One multi-row insert of new rows, returning the new ids where the engine has
 * `INSERT … RETURNING` (MySQL reads `insertId` instead). Values are keyed by column name (or row
 * key) and already encoded, but for a `Date` in the retryAfter or lease column (a time to run
 * at), written as the engine stores time; generated columns are left out even when given, so the
 * database fills them; a key that names no described column is refused.
 */
export function insertQuery(ctx: StatementContext, spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> {
  const { insert } = insertOf(ctx, spec, rows);
  return ctx.capabilities.insertReturning ? compiled(insert.returning(spec.id.name)) : compiled(insert);
}

/**
 * The insert of rows that may carry a dedup key, where the engine has `INSERT … RETURNING`:
 * `ON CONFLICT (key) DO NOTHING`, returning the id and key of each row it inserted (a row whose
 * key a row already holds, or an earlier row of the same insert, is skipped). None elsewhere
 * (MySQL, MariaDB): there each keyed row is a plain insert, and a duplicate-key error means the key is held.
 */
export function insertKeyedQuery(ctx: StatementContext, spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> {
  const key = spec.key;
  if (key === undefined) throw new SqlInboxError("Declaration", "a publish with a key needs a dedup key column", { table: spec.table });
  const { insert } = insertOf(ctx, spec, rows);
  return compiled(insert.onConflict((oc) => oc.column(key.name).doNothing()).returning([spec.id.name, key.name]));
}

/**
 * The id and key of the rows holding `keys`. Where a keyed row is a plain insert (MySQL, MariaDB)
 * the read locks them (`FOR UPDATE`): a locking read sees the latest committed row even inside a
 * transaction whose snapshot is older than the row that made the insert fail.
 */
export function keyedRowsQuery(ctx: StatementContext, spec: InboxDescription, keys: readonly string[]): CompiledQuery<RawRow> {
  const key = spec.key;
  if (key === undefined) throw new SqlInboxError("Declaration", "a publish with a key needs a dedup key column", { table: spec.table });
  const select = ctx.db
    .selectFrom(tableRef(spec))
    .select([spec.id.name, key.name])
    .where(key.name, "in", [...keys]);
  return ctx.capabilities.insertReturning ? compiled(select) : compiled(select.forUpdate());
}

/**
 * Debounce: the row holding `row`'s key takes the row's other values (payload, run-at, priority,
 * data columns) unless it is in work. Lease tables only, where the lease column fences it: a row
 * whose lease runs past `now` is in work and left alone, and a claim stamping the lease meanwhile
 * holds the row lock, so exactly one of the two changes the row. Affects 0 or 1 rows.
 */
export function replaceKeyedQuery(ctx: StatementContext, spec: InboxDescription, row: RawRow, now: Date): CompiledQuery {
  const key = spec.key;
  const lease = spec.lease;
  if (key === undefined || lease === undefined) throw new SqlInboxError("Declaration", "replace needs a dedup key column and a lease column", { table: spec.table });
  const keyValue = row[key.name];
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    const column = spec.columns.find((c) => c.name === name);
    if (column === undefined || column.generated || name === key.name || value === undefined) continue;
    values[name] = value instanceof Date && (column.role === "retryAfter" || column.role === "lease") ? ctx.time.encode(value, COMPARE_PRECISION) : value;
  }
  const at = ctx.time.encode(now, COMPARE_PRECISION);
  return compiled(
    ctx.db
      .updateTable(tableRef(spec))
      .set(values)
      .where(key.name, "=", keyValue)
      .where((eb) => eb.or([eb(lease.name, "is", null), eb(lease.name, "<=", at)])),
  );
}

function insertOf(ctx: StatementContext, spec: InboxDescription, rows: readonly RawRow[]) {
  if (rows.length === 0) throw new SqlInboxError("Declaration", "a publish needs at least one row", { table: spec.table });
  const values = rows.map((row) => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(row)) {
      const column = spec.columns.find((c) => c.name === key) ?? spec.columns.find((c) => c.key === key);
      if (column === undefined) {
        throw new SqlInboxError("Declaration", `a published row names "${key}", which is not a described column`, { table: spec.table, column: key });
      }
      if (column.generated || value === undefined) continue;
      // A time to run at (retryAfter, or the lease column on a lease table) is written as the engine stores time.
      out[column.name] = value instanceof Date && (column.role === "retryAfter" || column.role === "lease") ? ctx.time.encode(value, COMPARE_PRECISION) : value;
    }
    return out;
  });
  const empty = values.every((v) => Object.keys(v).length === 0);
  if (empty && values.length > 1) {
    throw new SqlInboxError("Declaration", "rows with only generated columns are published one at a time", { table: spec.table });
  }
  const insert = empty ? ctx.db.insertInto(tableRef(spec)).defaultValues() : ctx.db.insertInto(tableRef(spec)).values(values);
  return { insert, empty };
}
