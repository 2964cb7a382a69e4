import { SqlInboxError, type ColumnDescription, type InboxDescription } from "@sqlinbox/core/internal";
import type { Expression, SqlBool } from "kysely";
import type { ClaimOptions } from "../types.js";
import type { Eb } from "./query-db.js";
import { col, tableRef } from "./table-ref.js";

/**
 * Ordered keys: a row is claimable only while it is among its key's first `perKey` rows (1 unless
 * `maxInWorkPerKey` says more) in id order, counting every unprocessed row of the key — due or
 * delayed, free or in work. The claim walks the due rows in claim order as any claim does and
 * keeps those that pass, so it picks the heads of many keys at once, and a process runs up to
 * `workers(n)` keys side by side.
 *
 * Why id order, and not claim order, inside a key: a row in work stays unprocessed until it
 * settles, and every row published later has a larger id, so a later row can never rank before
 * the rows in work; a plain read (no lock, no lease) is enough to see who is ahead, in the lease
 * and the row-lock form alike. Priority and retry_after order the keys' heads against each other,
 * never the rows of one key. A retry leaves the row where it is: it stays the head, and a delayed
 * head (retry_after in the future) holds its key until it is due.
 *
 * Concurrent claims: two claimers that read the same head meet on its row (`FOR UPDATE SKIP LOCKED`,
 * or the lease re-checked when the row is locked; SQLite has one writer), and a claimer whose read
 * is older sees more rows ahead, never fewer. What this rule cannot see is a row committed late
 * with a smaller id than a row already in work (two transactions publishing to one key at once):
 * ids are given at insert, not at commit. Publish one key's rows from one transaction at a time.
 *
 * The probe is an index lookup per candidate row on `(order key, id)` (`createInboxTable` makes it,
 * partial on unprocessed rows where the engine has partial indexes).
 *
 * @example
 * The claim of a lease table with an order key, on PostgreSQL (one row of a key at a time):
 * ```sql postgres:lease.claim(ordered)
 * with "picked" as (select "ledger_jobs"."id" from "ledger_jobs"
 *   where ("ledger_jobs"."locked_until" is null or "ledger_jobs"."locked_until" <= $1)
 *     and "ledger_jobs"."id" = (select "order_head"."id" from "ledger_jobs" as "order_head"
 *       where "order_head"."account_id" = "ledger_jobs"."account_id" order by "order_head"."id" asc limit $2)
 *   order by "ledger_jobs"."id" asc limit $3 for update skip locked),
 * "claimed" as (update "ledger_jobs" set "locked_until" = $4, "attempt" = "attempt" + 1
 *   where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "account_id", "payload")
 * select * from "claimed" order by "id" asc
 * ```
 */
export const ORDER_HEAD = "order_head";

/**
 * The column whose values a claim keeps in order: the order key, or, on a group table whose
 * subscription sets `perKey` (`maxInWorkPerKey`), the group (its rows then run `perKey` at a time,
 * in id order, in place of fifo's one at a time in claim order). `undefined`: no head rule of this kind.
 */
export function orderedKey(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">): ColumnDescription | undefined {
  return spec.orderKey ?? (options.perKey !== undefined ? spec.group : undefined);
}

/** A fifo table's own head rule applies: fifo, and no `perKey` that replaces it with the ordered-key rule. */
export function fifoRuleApplies(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">): boolean {
  return spec.fifo && options.perKey === undefined;
}

/** The order key's head rule for the row a claim reads from the table (unaliased). */
export function orderKeyHeadCondition(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">) {
  const key = orderedKey(spec, options);
  if (key === undefined) throw new SqlInboxError("Declaration", "the head rule of an order key needs an order key column, or a group column and perKey", { table: spec.table });
  const perKey = options.perKey ?? 1;
  if (!Number.isInteger(perKey) || perKey < 1) throw new RangeError(`perKey must be a positive integer, got ${perKey}`);
  const id = col(spec, spec.id.name);
  return (eb: Eb): Expression<SqlBool> => {
    let ahead = eb
      .selectFrom(`${tableRef(spec)} as ${ORDER_HEAD}`)
      .select(`${ORDER_HEAD}.${spec.id.name}`)
      .where(`${ORDER_HEAD}.${key.name}`, "=", eb.ref(col(spec, key.name)));
    if (spec.processedAt !== undefined) ahead = ahead.where(`${ORDER_HEAD}.${spec.processedAt.name}`, "is", null);
    ahead = ahead.orderBy(`${ORDER_HEAD}.${spec.id.name}`, "asc").limit(1);
    // One at a time: the row is its key's first. More: the row is not past its key's perKey-th row
    // (none: the key has fewer rows than that).
    if (perKey === 1) return eb(id, "=", ahead);
    return eb(id, "<=", eb.fn.coalesce(ahead.offset(perKey - 1), eb.ref(id)));
  };
}
