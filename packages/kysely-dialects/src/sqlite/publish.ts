import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { PublishStatements, RawRow } from "../types.js";
import { insertQuery } from "../shared/publish-insert.js";
import { sqliteContext as ctx } from "./query-builder.js";

/** `insert into "t" ("payload", …) values (?, …), … returning "id"` (SQLite 3.35+). */
export function insertRows(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> {
  return insertQuery(ctx, spec, rows, true);
}

export const sqlitePublish: PublishStatements = Object.freeze({ insert: insertRows });
