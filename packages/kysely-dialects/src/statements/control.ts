import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type Expression, type SqlBool } from "kysely";
import type { ControlRow, ControlStatements } from "../types.js";
import type { TableTypes } from "./create-table.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext } from "./query-db.js";
import { tableRef } from "./table-ref.js";

/** The table where pauses and cancel requests wait for every process to read them. */
export const CONTROL_TABLE = "sqlinbox_control";

/**
 * The control table's statements on one engine. The table is small: one row per paused route
 * (`kind = 'pause'`, `target = ''`) and one per cancel request still open (`kind = 'cancel'`,
 * `target` the row's id as text). Every app reads it whole, once per poll interval.
 *
 * ```sql postgres:control.read
 * select "kind", "route", "target" from "sqlinbox_control"
 * ```
 */
export function controlStatements(ctx: StatementContext, types: TableTypes): ControlStatements {
  const db = ctx.db;
  const at = (date: Date) => ctx.time.encode(date, COMPARE_PRECISION);
  return Object.freeze({
    table: CONTROL_TABLE,
    // The three key columns fit one primary key on every engine (MySQL's varchar(255) × 3 stays under its 3072-byte key limit).
    create: (): CompiledQuery[] => [
      db.schema
        .createTable(CONTROL_TABLE)
        .ifNotExists()
        .addColumn("kind", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("route", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("target", sql.raw(types.indexedText), (c) => c.notNull())
        .addColumn("requested_at", sql.raw(types.time), (c) => c.notNull())
        .addPrimaryKeyConstraint(`${CONTROL_TABLE}_pkey`, ["kind", "route", "target"])
        .compile(),
    ],
    read: (): CompiledQuery<ControlRow> => compiled(db.selectFrom(CONTROL_TABLE).select(["kind", "route", "target"])),
    // Delete then insert, in one transaction: a pause given twice leaves one row, on every engine alike.
    pause: (route: string, now: Date): CompiledQuery[] => [
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "pause").where("route", "=", route)),
      compiled(db.insertInto(CONTROL_TABLE).values({ kind: "pause", route, target: "", requested_at: at(now) })),
    ],
    resume: (route: string): CompiledQuery => compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "pause").where("route", "=", route)),
    requestCancel: (route: string, target: string, now: Date): CompiledQuery[] => [
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cancel").where("route", "=", route).where("target", "=", target)),
      compiled(db.insertInto(CONTROL_TABLE).values({ kind: "cancel", route, target, requested_at: at(now) })),
    ],
    clearCancel: (route: string, target: string): CompiledQuery =>
      compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cancel").where("route", "=", route).where("target", "=", target)),
    purgeCancels: (before: Date): CompiledQuery => compiled(db.deleteFrom(CONTROL_TABLE).where("kind", "=", "cancel").where("requested_at", "<", at(before))),
    lockQueued: (spec: InboxDescription, id: unknown): CompiledQuery<{ id: unknown }> | null =>
      ctx.capabilities.rowLock ? compiled(db.selectFrom(tableRef(spec)).select(sql.ref(spec.id.name).as("id")).where(spec.id.name, "=", id).forUpdate().skipLocked()) : null,
    findRow: (spec: InboxDescription, id: unknown): CompiledQuery<Record<string, unknown>> => {
      const keyColumns = (spec.advisoryKey?.parts ?? []).flatMap((p) => ("column" in p ? [p.column.name] : []));
      const columns = [...new Set([spec.id.name, ...keyColumns])];
      let query = db.selectFrom(tableRef(spec)).select(columns).where(spec.id.name, "=", id);
      if (spec.processedAt !== undefined) query = query.where(spec.processedAt.name, "is", null);
      return compiled(query);
    },
    removeQueued: (spec: InboxDescription, id: unknown, now: Date): CompiledQuery => {
      const notInWork = (eb: Eb): Expression<SqlBool> => {
        const terms: Expression<SqlBool>[] = [eb(spec.id.name, "=", id)];
        if (spec.processedAt !== undefined) terms.push(eb(spec.processedAt.name, "is", null));
        if (spec.lease !== undefined) terms.push(eb.or([eb(spec.lease.name, "is", null), eb(spec.lease.name, "<=", at(now))]));
        return eb.and(terms);
      };
      if (spec.processedAt !== undefined) {
        return compiled(
          db
            .updateTable(tableRef(spec))
            .set({ [spec.processedAt.name]: at(now) })
            .where(notInWork),
        );
      }
      return compiled(db.deleteFrom(tableRef(spec)).where(notInWork));
    },
  });
}
