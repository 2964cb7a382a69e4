import type { InboxDescription } from "@sqlinbox/core/internal";
import type { Expression, SqlBool } from "kysely";
import type { ClaimOptions } from "../types.js";
import { col, COMPARE_PRECISION, type Eb, type QueryDb, type StatementContext, tableRef } from "./query-db.js";
import { fifoHeadCondition } from "./fifo-head.js";
import { fifoRuleApplies, orderedKey, orderKeyHeadCondition } from "./order-key-head.js";
import { claimOrder } from "./claim-order.js";

/**
 * The rows a claim may take, per the description's roles:
 * - not processed (`processed_at IS NULL`),
 * - due (`retry_after IS NULL OR retry_after <= :now`),
 * - in the subscription's group (`grp = :group`),
 * - not leased (`locked_until IS NULL OR locked_until <= :now`, lease form only).
 *
 * A fifo table adds the head rule on top (`fifo-head.ts`): only its group's first row in claim
 * order is claimable, and only while no other row of the group is in work. A table with an order
 * key adds its own (`order-key-head.ts`): only each key's first rows in id order.
 */
function claimable(ctx: StatementContext, spec: InboxDescription, options: Pick<ClaimOptions, "now" | "group" | "exclude">) {
  const now = ctx.time.encode(options.now, COMPARE_PRECISION);
  return (eb: Eb): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [];
    if (spec.processedAt !== undefined) conditions.push(eb(col(spec, spec.processedAt.name), "is", null));
    if (spec.retryAfter !== undefined) {
      const ref = col(spec, spec.retryAfter.name);
      conditions.push(eb.or([eb(ref, "is", null), eb(ref, "<=", now)]));
    }
    if (spec.group !== undefined && options.group !== undefined) conditions.push(eb(col(spec, spec.group.name), "=", options.group));
    if (spec.lease !== undefined) {
      const ref = col(spec, spec.lease.name);
      conditions.push(eb.or([eb(ref, "is", null), eb(ref, "<=", now)]));
    }
    // Rows this process parked for a delay it has no column for.
    if (options.exclude !== undefined && options.exclude.length > 0) conditions.push(eb(col(spec, spec.id.name), "not in", options.exclude));
    return eb.and(conditions);
  };
}

/** True when the description has a role that narrows what is claimable (otherwise no WHERE at all). */
function narrowsClaimable(spec: InboxDescription, options: Pick<ClaimOptions, "group" | "exclude">): boolean {
  if (options.exclude !== undefined && options.exclude.length > 0) return true;
  return spec.processedAt !== undefined || spec.retryAfter !== undefined || spec.lease !== undefined || (spec.group !== undefined && options.group !== undefined);
}

/** Adds `WHERE <claimable>` to a query, or nothing when every row is claimable. */
// biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely query builder; each declares its own where/orderBy overloads
export function whereClaimable<Q extends { where(...args: any[]): Q }>(
  ctx: StatementContext,
  spec: InboxDescription,
  options: Pick<ClaimOptions, "now" | "group" | "exclude">,
  query: Q,
): Q {
  return narrowsClaimable(spec, options) ? query.where(claimable(ctx, spec, options)) : query;
}

/** The described columns, table-qualified, in description order. */
export function describedColumns(spec: InboxDescription): string[] {
  return spec.columns.map((c) => col(spec, c.name));
}

/** What a claimable select reads and whether it locks. */
export interface ClaimableSelect {
  /** `skip locked`: lock the rows read, passing over rows other claims hold; `none`: read only. */
  readonly lock: "skip locked" | "none";
  /** Table-qualified columns to read; the described columns when absent. */
  readonly columns?: readonly string[];
}

/**
 * The claimable rows in claim order, at most `limit`, locked or not as `select.lock` says.
 * On a fifo table, only the group's head (`fifo-head.ts`), read without a lock: where the engine
 * locks rows, `lockFifoGroup` already holds every row of the group this claim may take.
 */
export function selectClaimableQuery(ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, select: ClaimableSelect) {
  const db: QueryDb = ctx.db;
  let query = whereClaimable(ctx, spec, options, db.selectFrom(tableRef(spec)).select(select.columns ?? describedColumns(spec)));
  const fifo = fifoRuleApplies(spec, options);
  if (fifo) query = query.where(fifoHeadCondition(ctx, spec, options));
  if (orderedKey(spec, options) !== undefined) query = query.where(orderKeyHeadCondition(ctx, spec, options));
  query = claimOrder(ctx, spec, query, { qualified: true }).limit(options.limit);
  return select.lock === "skip locked" && !fifo ? query.forUpdate().skipLocked() : query;
}
