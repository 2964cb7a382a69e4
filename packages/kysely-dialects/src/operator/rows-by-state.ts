import { SqlInboxError } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { RawRow } from "../types.js";
import { compiled, COMPARE_PRECISION, type Eb, type StatementContext } from "../statements/query-db.js";
import { hasHeads, isWholeTable, rowStateIs } from "./row-state.js";
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
  return compiled(handledBefore(ctx, table, options)(query).orderBy(spec.id.name).limit(options.limit));
}

/** Narrows to rows handled before `processedBefore`, when given (a table with a processedAt column). */
function handledBefore(ctx: StatementContext, table: OperatorTable, options: Omit<PeekOptions, "limit">) {
  // biome-ignore lint/suspicious/noExplicitAny: accepts every Kysely query builder; each declares its own where overloads
  return <Q extends { where(...args: any[]): Q }>(query: Q): Q => {
    const before = options.processedBefore;
    if (before === undefined) return query;
    const column = table.spec.processedAt;
    if (column === undefined) {
      throw new SqlInboxError("Declaration", "rows handled before a time need a processedAt column: this table deletes a row when it is handled", { table: table.spec.table });
    }
    return query.where(column.name, "<", ctx.time.encode(before, COMPARE_PRECISION));
  };
}

/** One row with `rows`: how many rows `purgeQuery` with the same options deletes. */
export function countRowsQuery(ctx: StatementContext, table: OperatorTable, options: Omit<PeekOptions, "limit">): CompiledQuery<RawRow> {
  const { spec } = table;
  let query = ctx.db.selectFrom(spec.table).select((eb: Eb) => eb.fn.countAll().as("rows"));
  if (!isWholeTable(spec, options.state)) query = query.where(rowStateIs(ctx, spec, options.state, options.now));
  if (options.group !== undefined && spec.group !== undefined) query = query.where(spec.group.name, "=", options.group);
  if (options.ids !== undefined) query = query.where(spec.id.name, "in", [...options.ids]);
  return compiled(handledBefore(ctx, table, options)(query));
}

/**
 * Deletes the rows in a state, narrowed to a group and to given ids when asked. On a fifo table,
 * `ready` and `waiting` read the table again (the head subquery): MySQL refuses a DELETE whose
 * subquery reads its target (error 1093), so the ids are chosen in a derived table first, which
 * it materializes. The waiting rows of a lease table with fifo and no other role, on MySQL:
 * ```sql mysql:operator.purge(fifo, waiting)
 * delete from `fifo_jobs` where `id` in (select `fifo_rows`.`id` from (select `id` from `fifo_jobs`
 *   where ((`locked_until` is null or `locked_until` <= ?)
 *     and case when `fifo_jobs`.`id` = (select `fifo_head`.`id` from `fifo_jobs` as `fifo_head`
 *       where `fifo_head`.`grp` = `fifo_jobs`.`grp`
 *       order by case when `fifo_head`.`locked_until` > ? then 0 else 1 end asc, `fifo_head`.`id` asc limit ?)
 *     then 0 else 1 end = 1)) as `fifo_rows`)
 * ```
 */
export function purgeQuery(ctx: StatementContext, table: OperatorTable, options: Omit<PeekOptions, "limit">): CompiledQuery {
  const { spec } = table;
  let query = ctx.db.deleteFrom(spec.table);
  if (hasHeads(spec) && (options.state === "ready" || options.state === "waiting")) {
    const state = rowStateIs(ctx, spec, options.state, options.now);
    const id = spec.id.name;
    query = query.where(id, "in", (eb: Eb) => eb.selectFrom((d: Eb) => d.selectFrom(spec.table).select(id).where(state).as("fifo_rows")).select(`fifo_rows.${id}`));
  } else if (!isWholeTable(spec, options.state)) query = query.where(rowStateIs(ctx, spec, options.state, options.now));
  if (options.group !== undefined && spec.group !== undefined) query = query.where(spec.group.name, "=", options.group);
  if (options.ids !== undefined) query = query.where(spec.id.name, "in", [...options.ids]);
  return compiled(handledBefore(ctx, table, options)(query));
}
