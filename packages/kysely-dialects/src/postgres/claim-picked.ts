import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery, type QueryCreator } from "kysely";
import type { RawRow } from "../types.js";
import { stampValues, type LeaseStamp } from "../statements/claim-stamp.js";
import { claimOrder } from "../statements/claim-order.js";
import { compiled, type Eb, type StatementContext, tableRef } from "../statements/query-db.js";

/**
 * The second half of every Postgres claim: a `claimed` CTE that stamps the rows a `picked` CTE
 * names (deadline when `lease` is given, attempt + 1) and returns the described columns, then
 * the outer select that puts them back in claim order (`RETURNING` does not keep it).
 * A lease claim returns its lease column as a typed NULL: the deadline it wrote is the one the
 * caller gave, and `pg` would parse a timestamp per row (about a microsecond each) only to hand it
 * back. The column stays in the row (the caller fills it in without changing the row's shape).
 */
export function claimPicked(
  ctx: StatementContext,
  spec: InboxDescription,
  lease: LeaseStamp | null,
  // biome-ignore lint/suspicious/noExplicitAny: tables are named at run time by a description, so no database interface describes them
  picked: QueryCreator<any>,
): CompiledQuery<RawRow> {
  const id = spec.id.name;
  const query = picked
    .with("claimed", (db) =>
      db
        .updateTable(tableRef(spec))
        .set(stampValues(ctx, spec, lease))
        .where(id, "in", (eb: Eb) => eb.selectFrom("picked").select(id))
        .returning(spec.columns.map((c) => (lease !== null && c.name === spec.lease?.name ? sql<null>`null::timestamptz`.as(c.name) : c.name))),
    )
    .selectFrom("claimed")
    .selectAll();
  return compiled(claimOrder(ctx, spec, query, { qualified: false }));
}
