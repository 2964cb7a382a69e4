import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { col, compiled, type Eb, type StatementContext } from "./query-db.js";

/** What a metrics reader samples now and then (never on the delivery path). */
export interface ObserveStatements {
  /** One row with `depth`: the rows still to be finished (unprocessed; of `group` where the table has one). */
  queueDepth(spec: InboxDescription, options: { readonly group?: string }): CompiledQuery<{ depth: unknown }>;
}

/**
 * The rows still to be finished (ready, delayed or in work): unprocessed rows, of the
 * subscription's group where the table has one. One aggregate over the table, sampled by a
 * metrics reader every few seconds at most, never on the delivery path.
 */
export function queueDepthQuery(ctx: StatementContext, spec: InboxDescription, options: { readonly group?: string }): CompiledQuery<{ depth: unknown }> {
  let query = ctx.db.selectFrom(spec.table).select((eb: Eb) => eb.fn.countAll().as("depth"));
  if (spec.processedAt !== undefined) query = query.where(col(spec, spec.processedAt.name), "is", null);
  if (spec.group !== undefined && options.group !== undefined) query = query.where(col(spec, spec.group.name), "=", options.group);
  return compiled(query);
}
