import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { col, compiled, probeLock, tableRef, type Eb, type StatementContext } from "../statements/query-db.js";
import { claimIndexOrder, FIRST_ID, firstNotDoneIds } from "./claim-index-order.js";
import { isWholeTable, rowStateIs } from "./row-state.js";
import { groupAs } from "./status.js";

/**
 * The table a read of a large table's first `limit` rows starts from: the table itself (the caller
 * orders and limits), or on MariaDB the table joined to the ids of its first rows not done
 * (`firstNotDoneIds`), which bound it already.
 */
function boundedFrom(ctx: StatementContext, spec: InboxDescription, limit: number | undefined, partialIndexes: boolean) {
  if (limit === undefined || partialIndexes) return ctx.db.selectFrom(spec.table);
  return ctx.db.selectFrom(tableRef(spec)).innerJoin(firstNotDoneIds(ctx, spec, limit, partialIndexes), `first.${FIRST_ID}`, col(spec, spec.id.name));
}

/** The id column, qualified where `boundedFrom` joins the table to `first`. */
const idOf = (spec: InboxDescription, limit: number | undefined, partialIndexes: boolean) => (limit === undefined || partialIndexes ? spec.id.name : col(spec, spec.id.name));

/**
 * The row-lock probe: the ready rows' id and group, locked and skipping held rows (`probeLock`). A row a
 * worker holds in its claim transaction is skipped, so ready rows minus the rows returned are in
 * work. No LIMIT: every ready row is counted. Run in a transaction that is rolled back at once.
 */
export function lockableProbeQuery(ctx: StatementContext, spec: InboxDescription, now: Date, limit: number | undefined, partialIndexes: boolean): CompiledQuery<RawRow> {
  // A large table's probe: the first `limit` rows not done in claim order, through the claim index.
  let query = boundedFrom(ctx, spec, limit, partialIndexes).select((eb: Eb) => [eb.ref(idOf(spec, limit, partialIndexes)).as("id"), groupAs(spec)(eb)]);
  if (!isWholeTable(spec, "ready")) query = query.where(rowStateIs(ctx, spec, "ready", now));
  if (limit !== undefined && partialIndexes) query = claimIndexOrder(ctx, spec, query, partialIndexes).limit(limit);
  return compiled(probeLock(ctx, query));
}

/**
 * The rows whose advisory keys may be held: the ready rows' id, group and the columns their key is
 * made of, in id order, at most `limit`; the caller builds each key and asks which are held.
 */
export function advisoryCandidatesQuery(
  ctx: StatementContext,
  spec: InboxDescription,
  now: Date,
  limit: number,
  order: "id" | "claim",
  partialIndexes: boolean,
): CompiledQuery<RawRow> {
  const keyColumns = (spec.advisoryKey?.parts ?? []).flatMap((p) => ("column" in p && p.column.name !== spec.id.name ? [p.column.name] : []));
  // A large table's candidates come in claim order, which the claim index holds; id order walks the primary key past every done row.
  const claim = order === "claim";
  let query = boundedFrom(ctx, spec, claim ? limit : undefined, partialIndexes).select((eb: Eb) => [
    eb.ref(idOf(spec, claim ? limit : undefined, partialIndexes)).as("id"),
    groupAs(spec)(eb),
    ...[...new Set(keyColumns)].map((c) => eb.ref(c).as(c)),
  ]);
  if (!isWholeTable(spec, "ready")) query = query.where(rowStateIs(ctx, spec, "ready", now));
  if (claim) return compiled(partialIndexes ? claimIndexOrder(ctx, spec, query, partialIndexes).limit(limit) : query);
  return compiled(query.orderBy(spec.id.name).limit(limit));
}
