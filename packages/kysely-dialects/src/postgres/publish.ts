import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { PublishStatements, RawRow } from "../types.js";
import { insertQuery } from "../shared/publish-insert.js";
import { postgresContext as ctx } from "./query-builder.js";

/** `insert into "t" ("payload", …) values ($1, …), … returning "id"`. */
export function insertRows(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> {
  return insertQuery(ctx, spec, rows, true);
}

export const postgresPublish: PublishStatements = Object.freeze({ insert: insertRows });
