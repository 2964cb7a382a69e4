import type { InboxDescription } from "@sqlinbox/core/internal";
import { claimOrder } from "../statements/claim-order.js";
import { tableRef, type Eb, type StatementContext } from "../statements/query-db.js";

/**
 * The claim index's own order, for a read that walks it across every group and stops at a LIMIT
 * (a large table's status): the group, then processedAt where the engine has no partial index and a
 * group leads (there processedAt follows the group in the index; every row read has it NULL, so the
 * order is still claim order), then claim order. Without processedAt in it, MariaDB sorts the whole table instead.
 */
// biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely select builder; each declares its own orderBy overloads
export function claimIndexOrder<Q extends { orderBy(...args: any[]): Q }>(ctx: StatementContext, spec: InboxDescription, query: Q, partialIndexes: boolean): Q {
  let q = query;
  if (spec.group !== undefined) {
    q = q.orderBy(spec.group.name);
    // Without a group processedAt leads the index, and `IS NULL` on it is an equality MariaDB orders past; naming it there makes it sort.
    if (spec.processedAt !== undefined && !partialIndexes) q = q.orderBy(spec.processedAt.name);
  }
  return claimOrder(ctx, spec, q, { qualified: false });
}

/** The one column of `firstNotDoneIds`. */
export const FIRST_ID = "first_id";

/**
 * The ids of the first `cap` rows not done in the claim index's order, as the derived table `first`
 * (`first_id`). The read names only the claim index's columns, so it walks that index alone: MariaDB,
 * whose claim index holds processedAt after the group, otherwise sorts the whole table rather than
 * fetch each row the walk passes. A large table's reads join the table to it there. On a grouped
 * table the walk passes each group's done rows after its rows not done (they follow them in the
 * index): an index-only read, bounded by the index rather than the cap.
 */
export function firstNotDoneIds(ctx: StatementContext, spec: InboxDescription, cap: number, partialIndexes: boolean) {
  let query = ctx.db.selectFrom(tableRef(spec)).select((eb: Eb) => eb.ref(spec.id.name).as(FIRST_ID));
  const processedAt = spec.processedAt?.name;
  if (processedAt !== undefined) {
    // After a group, MariaDB reads `processed_at IS NULL` as an index condition and sorts every entry
    // instead of walking the index in order; the same test inside a CASE is a plain filter of the walk.
    query =
      spec.group !== undefined && !partialIndexes
        ? query.where((eb: Eb) => eb(eb.case().when(processedAt, "is", null).then(eb.lit(1)).else(eb.lit(0)).end(), "=", eb.lit(1)))
        : query.where(processedAt, "is", null);
  }
  return claimIndexOrder(ctx, spec, query, partialIndexes).limit(cap).as("first");
}
