import type { InboxDescription } from "@sqlinbox/core/internal";
import { col, type StatementContext } from "./query-db.js";

/** How a claim names its order columns: table-qualified inside the select, bare over a CTE's rows, or under an alias. */
export interface OrderNames {
  readonly qualified: boolean;
  /** Qualify with this alias instead of the table (a fifo head subquery over the same table). */
  readonly alias?: string;
}

/** Claim order: `priority` (smaller first), then `retry_after` (never-delayed rows first), then id. */
// biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely query builder; each declares its own where/orderBy overloads
export function claimOrder<Q extends { orderBy(...args: any[]): Q }>(ctx: StatementContext, spec: InboxDescription, query: Q, names: OrderNames): Q {
  const name = (n: string) => (names.alias !== undefined ? `${names.alias}.${n}` : names.qualified ? col(spec, n) : n);
  let q = query;
  if (spec.priority !== undefined) q = q.orderBy(name(spec.priority.name), "asc");
  if (spec.retryAfter !== undefined) {
    // NULL (never delayed) first on every engine: MySQL and SQLite already sort it so; Postgres is told.
    q = ctx.capabilities.nullsFirstByDefault
      ? q.orderBy(name(spec.retryAfter.name), "asc")
      : q.orderBy(name(spec.retryAfter.name), (ob: { asc(): { nullsFirst(): unknown } }) => ob.asc().nullsFirst());
  }
  return q.orderBy(name(spec.id.name), "asc");
}
