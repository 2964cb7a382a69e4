import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { PublishStatements, RawRow } from "../types.js";
import { insertQuery } from "../shared/publish-insert.js";
import { mysqlContext as ctx } from "./query-builder.js";

/**
 * ``insert into `t` (`payload`, …) values (?, …), …`` — no RETURNING (MySQL has none):
 * the result's `insertId` is the first new id, and the rows of one insert get consecutive ids
 * (`innodb_autoinc_lock_mode` 1 or 2 with a simple insert).
 */
export function insertRows(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> {
  return insertQuery(ctx, spec, rows, false);
}

export const mysqlPublish: PublishStatements = Object.freeze({ insert: insertRows });
