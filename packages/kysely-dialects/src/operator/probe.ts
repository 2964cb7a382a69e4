import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { compiled, type Eb, type StatementContext } from "../statements/query-db.js";
import { isWholeTable, rowStateIs } from "./row-state.js";
import { groupAs } from "./status.js";

/**
 * The row-lock probe: the ready rows' id and group, locked with `FOR UPDATE SKIP LOCKED`. A row a
 * worker holds in its claim transaction is skipped, so ready rows minus the rows returned are in
 * work. No LIMIT: every ready row is counted. Run in a transaction that is rolled back at once.
 */
export function lockableProbeQuery(ctx: StatementContext, spec: InboxDescription, now: Date): CompiledQuery<RawRow> {
  let query = ctx.db.selectFrom(spec.table).select((eb: Eb) => [eb.ref(spec.id.name).as("id"), groupAs(spec)(eb)]);
  if (!isWholeTable(spec, "ready")) query = query.where(rowStateIs(ctx, spec, "ready", now));
  return compiled(query.forUpdate().skipLocked());
}

/**
 * The rows whose advisory keys may be held: the ready rows' id, group and the columns their key is
 * made of, in id order, at most `limit`; the caller builds each key and asks which are held.
 */
export function advisoryCandidatesQuery(ctx: StatementContext, spec: InboxDescription, now: Date, limit: number): CompiledQuery<RawRow> {
  const keyColumns = (spec.advisoryKey?.parts ?? []).flatMap((p) => ("column" in p && p.column.name !== spec.id.name ? [p.column.name] : []));
  let query = ctx.db.selectFrom(spec.table).select((eb: Eb) => [eb.ref(spec.id.name).as("id"), groupAs(spec)(eb), ...[...new Set(keyColumns)].map((c) => eb.ref(c).as(c))]);
  if (!isWholeTable(spec, "ready")) query = query.where(rowStateIs(ctx, spec, "ready", now));
  return compiled(query.orderBy(spec.id.name).limit(limit));
}
