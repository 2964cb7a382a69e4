import type { InboxDescription } from "@sqlinbox/core/internal";
import type { PublishStatements, RawRow } from "../types.js";
import { insertKeyedQuery, insertQuery, keyedRowsQuery, replaceKeyedQuery } from "../statements/insert.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * Publishing: one insert of new rows, usable inside the caller's own transaction; the new ids
 * come back where the engine has `INSERT … RETURNING` (`capabilities.insertReturning`).
 */
export function publishStatements(engine: EngineTraits): PublishStatements {
  const ctx = engine.statements;
  return Object.freeze({
    insert: (spec: InboxDescription, rows: readonly RawRow[]) => insertQuery(ctx, spec, rows),
    insertKeyed: (spec: InboxDescription, rows: readonly RawRow[]) => insertKeyedQuery(ctx, spec, rows),
    keyedRows: (spec: InboxDescription, keys: readonly string[]) => keyedRowsQuery(ctx, spec, keys),
    replaceKeyed: (spec: InboxDescription, row: RawRow, now: Date) => replaceKeyedQuery(ctx, spec, row, now),
  });
}
