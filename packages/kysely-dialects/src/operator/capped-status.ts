/**
 * The status of a large table, read through indexes and never over the whole table. `countByState`
 * reads every row once, which costs hundreds of milliseconds at a million rows; here each read is
 * bounded by a cap instead, and what reached the cap reads as "at least":
 *
 * - `rowSpan`: `min(id)` and `max(id)`, two ends of the primary key, from which the caller
 *   estimates the rows and decides whether the table is large;
 * - `sample`: the first `cap` rows not done in claim order, through the claim index (the one a
 *   claim walks), classified by state like `countByState`: while fewer than `cap` rows are not done
 *   the sample is all of them and its counts are exact;
 * - done rows counted up to `cap` in processedAt order (the processed index; on MariaDB the claim
 *   index, which processedAt leads);
 * - the attempts histogram (the sample's rows per attempt) and the expiring leases of the sample,
 *   so bounded the same way.
 *
 * A live lease has no index (an index on the lease column would end Postgres HOT updates of every
 * claim), so leased, delayed and ready rows are told apart only inside the sample.
 */
import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { notForTable } from "../shared/no-statement.js";
import type { RawRow } from "../types.js";
import { COMPARE_PRECISION, col, compiled, tableRef, type Eb, type QueryDb, type StatementContext } from "../statements/query-db.js";
import { claimIndexOrder, FIRST_ID, firstNotDoneIds } from "./claim-index-order.js";
import { rowStateIs, stateExists, hasHeads } from "./row-state.js";
import { groupAs } from "./status.js";
import type { OperatorTable } from "./types.js";

/**
 * One row `{ lo, hi }`: the smallest and largest id, each one end of the primary key.
 * ```sql postgres:operator.rowSpan
 * select (select min("id") as "min" from "done_jobs") as "lo", (select max("id") as "max" from "done_jobs") as "hi"
 * ```
 */
export function rowSpanQuery(ctx: StatementContext, spec: InboxDescription): CompiledQuery<RawRow> {
  // Each end in its own subquery: SQLite reads min() or max() from the key only when it stands alone.
  const end = (eb: Eb, fn: "min" | "max") => eb.selectFrom(tableRef(spec)).select((e: Eb) => e.fn[fn](spec.id.name).as(fn));
  return compiled((ctx.db as QueryDb).selectNoFrom((eb: Eb) => [end(eb, "min").as("lo"), end(eb, "max").as("hi")]));
}

/** The roles a row's state, its head and the status read: never the payload or headers. */
const SAMPLED_ROLES = new Set(["id", "attempt", "lease", "retryAfter", "processedAt", "group", "priority", "orderKey"]);

/**
 * The first `cap` rows not done in the claim index's order (`claimIndexOrder`: the read walks the
 * index and stops; on MariaDB its ids alone, joined back to the table: `firstNotDoneIds`), as
 * `sample`; on a fifo table aliased as the table itself, so that the head's correlated subquery
 * reads it as it reads the table.
 */
function sample(ctx: StatementContext, table: OperatorTable, cap: number, partialIndexes: boolean) {
  const { spec } = table;
  const columns = spec.columns.filter((c) => SAMPLED_ROLES.has(c.role)).map((c) => c.name);
  if (table.createdAt !== undefined && !columns.includes(table.createdAt)) columns.push(table.createdAt);
  // A fifo head's subquery names the table: over the sample it must find the sample's columns there.
  const alias = hasHeads(spec) ? spec.table : "sample";
  if (!partialIndexes) {
    const first = firstNotDoneIds(ctx, spec, cap, partialIndexes);
    return ctx.db
      .selectFrom(tableRef(spec))
      .innerJoin(first, `first.${FIRST_ID}`, col(spec, spec.id.name))
      .select(columns.map((c) => col(spec, c)))
      .as(alias);
  }
  let query = ctx.db.selectFrom(tableRef(spec)).select(columns);
  if (spec.processedAt !== undefined) query = query.where(spec.processedAt.name, "is", null);
  return claimIndexOrder(ctx, spec, query, partialIndexes).limit(cap).as(alias);
}

/**
 * `countByState`'s columns over the sample (`done` is 0: `cappedDone` counts it), one row per group
 * and attempt (`attempt` NULL without the column), and `sampled`: how many rows the row stands for.
 * The sample holds fewer than the cap: every row not done is in it, and each count is exact; the
 * cap: each count is "at least".
 */
export function sampledStateQuery(ctx: StatementContext, table: OperatorTable, now: Date, cap: number, partialIndexes: boolean): CompiledQuery<RawRow> {
  const { spec } = table;
  const counted = (eb: Eb, state: "leased" | "delayed" | "ready" | "due", alias: string) =>
    stateExists(spec, state)
      ? eb.fn
          .count(
            eb
              .case()
              .when(rowStateIs(ctx, spec, state, now)(eb))
              .then(eb.lit(1))
              .end(),
          )
          .as(alias)
      : eb.lit(0).as(alias);
  let query = (ctx.db as QueryDb)
    .selectFrom(sample(ctx, table, cap, partialIndexes))
    .select((eb: Eb) => [
      groupAs(spec)(eb),
      spec.attempt === undefined ? eb.lit(null).as("attempt") : eb.ref(spec.attempt.name).as("attempt"),
      eb.fn.countAll().as("sampled"),
      eb.fn.countAll().as("total"),
      eb.lit(0).as("done"),
      counted(eb, "leased", "leased"),
      counted(eb, "delayed", "delayed"),
      counted(eb, "ready", "claimable"),
      ...(hasHeads(spec) ? [counted(eb, "due", "due")] : []),
      table.createdAt === undefined ? eb.lit(null).as("oldest") : eb.fn.min(table.createdAt).as("oldest"),
      spec.attempt === undefined ? eb.lit(null).as("max_attempt") : eb.fn.max(spec.attempt.name).as("max_attempt"),
      eb.fn.max(spec.id.name).as("max_id"),
    ]);
  // One row per group and attempt: the caller sums the groups' counts and reads the attempts histogram from the same pass.
  const by = [...(spec.group === undefined ? [] : [spec.group.name]), ...(spec.attempt === undefined ? [] : [spec.attempt.name])];
  if (by.length > 0) query = query.groupBy(by);
  return compiled(query);
}

/**
 * The done rows per group, counted up to `cap` in processedAt order (through the processed index,
 * or on MariaDB the claim index that processedAt leads): `grp`, `rows`. For a table with a
 * processedAt column.
 * ```sql postgres:operator.cappedDone
 * select null as "grp", count(*) as "rows" from (select "processed_at" from "done_jobs"
 *   where "processed_at" is not null order by "processed_at" limit $1) as "done"
 * ```
 */
export function cappedDoneQuery(ctx: StatementContext, spec: InboxDescription, cap: number): CompiledQuery<RawRow> {
  const processedAt = spec.processedAt ?? notForTable("operator.cappedDone", "it has no processedAt column", { table: spec.table });
  const columns = [...(spec.group === undefined ? [] : [spec.group.name]), processedAt.name];
  let inner = ctx.db.selectFrom(tableRef(spec)).select(columns).where(processedAt.name, "is not", null);
  for (const c of columns) inner = inner.orderBy(c);
  let query = (ctx.db as QueryDb).selectFrom(inner.limit(cap).as("done")).select((eb: Eb) => [groupAs(spec)(eb), eb.fn.countAll().as("rows")]);
  if (spec.group !== undefined) query = query.groupBy(spec.group.name);
  return compiled(query);
}

/** `expiringLeases` among the sample's rows. For a table with a lease column. */
export function sampledExpiringLeasesQuery(
  ctx: StatementContext,
  table: OperatorTable,
  now: Date,
  until: Date,
  limit: number,
  cap: number,
  partialIndexes: boolean,
): CompiledQuery<RawRow> {
  const { spec } = table;
  const lease = spec.lease?.name ?? notForTable("operator.sampledExpiringLeases", "it has no lease column", { table: spec.table });
  const query = (ctx.db as QueryDb)
    .selectFrom(sample(ctx, table, cap, partialIndexes))
    .select((eb: Eb) => [
      eb.ref(spec.id.name).as("id"),
      groupAs(spec)(eb),
      eb.ref(lease).as("locked_until"),
      spec.attempt === undefined ? eb.lit(null).as("attempt") : eb.ref(spec.attempt.name).as("attempt"),
    ])
    .where(lease, ">", ctx.time.encode(now, COMPARE_PRECISION))
    .where(lease, "<=", ctx.time.encode(until, COMPARE_PRECISION));
  return compiled(query.orderBy(lease).orderBy(spec.id.name).limit(limit));
}
