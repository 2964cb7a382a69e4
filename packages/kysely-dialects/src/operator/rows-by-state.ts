import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { compiled, type StatementContext } from "../statements/query-db.js";
import { isWholeTable, rowStateIs } from "./row-state.js";
import type { OperatorTable, PeekOptions } from "./types.js";

/**
 * The rows in a state, narrowed to a group and to given ids when asked, in id order, at most
 * `limit`. Every column of the real table (`select *`), so columns the description leaves out
 * (`created_at`, `last_error`) show too.
 */
export function peekQuery(ctx: StatementContext, table: OperatorTable, options: PeekOptions): CompiledQuery<RawRow> {
  const { spec } = table;
  let query = ctx.db.selectFrom(spec.table).selectAll();
  if (!isWholeTable(spec, options.state)) query = query.where(rowStateIs(ctx, spec, options.state, options.now));
  if (options.group !== undefined && spec.group !== undefined) query = query.where(spec.group.name, "=", options.group);
  if (options.ids !== undefined) query = query.where(spec.id.name, "in", [...options.ids]);
  return compiled(query.orderBy(spec.id.name).limit(options.limit));
}

/** Deletes the rows in a state, narrowed to a group and to given ids when asked. */
export function purgeQuery(ctx: StatementContext, table: OperatorTable, options: Omit<PeekOptions, "limit">): CompiledQuery {
  const { spec } = table;
  let query = ctx.db.deleteFrom(spec.table);
  if (!isWholeTable(spec, options.state)) query = query.where(rowStateIs(ctx, spec, options.state, options.now));
  if (options.group !== undefined && spec.group !== undefined) query = query.where(spec.group.name, "=", options.group);
  if (options.ids !== undefined) query = query.where(spec.id.name, "in", [...options.ids]);
  return compiled(query);
}
