import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { notForTable } from "../shared/no-statement.js";
import type { RawRow } from "../types.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext } from "../statements/query-db.js";

/**
 * The rows settled in a window, on a table that keeps its processed rows: their processedAt falls
 * in `(from, to]`, both read from the database's clock, so two windows that meet count no row twice.
 * ```sql postgres:operator.countProcessedBetween
 * select count(*) as "rows" from "done_jobs" where "processed_at" > $1 and "processed_at" <= $2
 * ```
 */
export function countProcessedBetweenQuery(ctx: StatementContext, spec: InboxDescription, from: Date, to: Date): CompiledQuery<RawRow> {
  const column = spec.processedAt ?? notForTable("operator.countProcessedBetween", "a processedAt column (this table deletes a row when it is handled)", { table: spec.table });
  return compiled(
    ctx.db
      .selectFrom(spec.table)
      .select((eb: Eb) => eb.fn.countAll().as("rows"))
      .where(column.name, ">", ctx.time.encode(from, COMPARE_PRECISION))
      .where(column.name, "<=", ctx.time.encode(to, COMPARE_PRECISION)),
  );
}
