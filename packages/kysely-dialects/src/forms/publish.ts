import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { notOnEngine } from "../shared/no-statement.js";
import { insertKeyedQuery, insertQuery, keyedRowsQuery, replaceKeyedQuery } from "../statements/insert.js";
import type { EngineTraits } from "./engine-traits.js";

/** Publishing a row. */
export interface PublishStatements {
  /** The insert of new rows; generated columns left out; values keyed by column name, already encoded. Returns the new ids where the engine can. */
  insert(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow>;
  /**
   * Rows that may carry a dedup key, where the engine has `INSERT … RETURNING`
   * (`capabilities.insertReturning`: Postgres, SQLite): `ON CONFLICT (key) DO NOTHING RETURNING id, key`,
   * so a held key inserts nothing and fails nothing. MySQL/MariaDB have none: a keyed row is a
   * plain `insert` there, one per statement, and a duplicate-key error (1062) says the key is held.
   */
  insertKeyed(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow>;
  /** The id and key of the rows holding `keys` (a locking read on MySQL/MariaDB, which sees the latest commit). */
  keyedRows(spec: InboxDescription, keys: readonly string[]): CompiledQuery<RawRow>;
  /**
   * Debounce on a lease table: the row holding `row`'s key takes its other values unless its lease
   * runs past `now` (in work). Affects 0 or 1 rows.
   */
  replaceKeyed(spec: InboxDescription, row: RawRow, now: Date): CompiledQuery;
}

/**
 * Publishing: one insert of new rows, usable inside the caller's own transaction; the new ids
 * come back where the engine has `INSERT … RETURNING` (`capabilities.insertReturning`).
 */
export function publishStatements(engine: EngineTraits): PublishStatements {
  const ctx = engine.statements;
  return Object.freeze({
    insert: (spec: InboxDescription, rows: readonly RawRow[]) => insertQuery(ctx, spec, rows),
    insertKeyed: ctx.capabilities.insertReturning
      ? (spec: InboxDescription, rows: readonly RawRow[]) => insertKeyedQuery(ctx, spec, rows)
      : () => notOnEngine(ctx.capabilities.engine, "publish.insertKeyed", "no INSERT … RETURNING: a keyed row is a plain insert (capabilities.insertReturning is false)"),
    keyedRows: (spec: InboxDescription, keys: readonly string[]) => keyedRowsQuery(ctx, spec, keys),
    replaceKeyed: (spec: InboxDescription, row: RawRow, now: Date) => replaceKeyedQuery(ctx, spec, row, now),
  });
}
