import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { notForTable } from "../shared/no-statement.js";
import type { RawRow } from "../types.js";
import { COMPARE_PRECISION, compiled, type Eb, type StatementContext } from "../statements/query-db.js";
import { hasHeads, rowStateIs, stateExists } from "./row-state.js";
import type { OperatorTable } from "./types.js";

/** The group column as `grp`, or a constant NULL when the table has none, so every engine returns the same shape. */
export const groupAs = (spec: InboxDescription) => (eb: Eb) => (spec.group === undefined ? eb.lit(null).as("grp") : eb.ref(spec.group.name).as("grp"));

/**
 * One pass over the table, one row per group: each row counts in exactly one state (`rowStateIs`),
 * compared against the host's `now`. With every role and a created-at column, on PostgreSQL:
 * ```sql postgres:operator.countByState(rich lease)
 * select "grp" as "grp", count(*) as "total",
 *   count(case when "processed_at" is not null then 1 end) as "done",
 *   count(case when ("processed_at" is null and "locked_until" > $1) then 1 end) as "leased",
 *   count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $2)
 *     and "retry_after" > $3) then 1 end) as "delayed",
 *   count(case when ("processed_at" is null and ("locked_until" is null or "locked_until" <= $4)
 *     and ("retry_after" is null or "retry_after" <= $5)) then 1 end) as "claimable",
 *   min(case when "processed_at" is null then "created_at" end) as "oldest",
 *   max("attempt") as "max_attempt", max("id") as "max_id"
 * from "jobs" group by "grp" order by "grp"
 * ```
 * On a fifo table (or one with an order key) `claimable` counts only each group's (key's) head and a `due` column follows it: the
 * rows ready or waiting (not done, no live lease, not delayed), counted without the head subquery,
 * so the subquery runs once per due row; the waiting rows are `due − claimable` (`waitingOf`).
 * Other tables have no `due` column. `max_id` lets a sampler tell how many rows were written
 * between two reads. A state the description cannot have is a constant 0, a missing column a
 * constant NULL, so every table returns the same columns (a fifo table one more, `due`).
 */
export function countByStateQuery(ctx: StatementContext, table: OperatorTable, now: Date): CompiledQuery<RawRow> {
  const { spec } = table;
  // A state the description cannot have (no processedAt: nothing is done) is a constant 0.
  const counted = (eb: Eb, state: "done" | "leased" | "delayed" | "ready" | "due", alias: string) =>
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
  let query = ctx.db.selectFrom(spec.table).select((eb: Eb) => [
    groupAs(spec)(eb),
    eb.fn.countAll().as("total"),
    counted(eb, "done", "done"),
    counted(eb, "leased", "leased"),
    counted(eb, "delayed", "delayed"),
    counted(eb, "ready", "claimable"),
    // Only a fifo table has rows behind a head: other tables keep their statement as it was.
    ...(hasHeads(spec) ? [counted(eb, "due", "due")] : []),
    table.createdAt === undefined
      ? eb.lit(null).as("oldest")
      : eb.fn.min(spec.processedAt === undefined ? eb.ref(table.createdAt) : eb.case().when(spec.processedAt.name, "is", null).then(eb.ref(table.createdAt)).end()).as("oldest"),
    spec.attempt === undefined ? eb.lit(null).as("max_attempt") : eb.fn.max(spec.attempt.name).as("max_attempt"),
    eb.fn.max(spec.id.name).as("max_id"),
  ]);
  if (spec.group !== undefined) query = query.groupBy(spec.group.name).orderBy(spec.group.name);
  return compiled(query);
}

/**
 * The due rows behind their group's head in one row of `countByState`: `due − claimable` on a fifo
 * table (the statement counts the heads once, not again for the rows behind them), `null` on a
 * table without fifo, which has no such rows.
 */
export function waitingOf(spec: InboxDescription, row: Readonly<Record<string, unknown>>): number | null {
  if (!hasHeads(spec)) return null;
  const { due, claimable } = row;
  if (due === undefined || due === null || claimable === undefined || claimable === null) {
    throw new TypeError(`waitingOf: a countByState row of the fifo table "${spec.table}" has due and claimable counts; this one has ${Object.keys(row).join(", ")}`);
  }
  return Number(due) - Number(claimable);
}

/**
 * The attempts histogram: rows not done, counted per group and attempt, in group then attempt
 * order. For a table with an attempt column.
 */
export function attemptHistogramQuery(ctx: StatementContext, spec: InboxDescription): CompiledQuery<RawRow> {
  const attempt = spec.attempt?.name ?? notForTable("operator.attemptHistogram", "it has no attempt column", { table: spec.table });
  let query = ctx.db.selectFrom(spec.table).select((eb: Eb) => [groupAs(spec)(eb), eb.ref(attempt).as("attempt"), eb.fn.countAll().as("rows")]);
  if (spec.processedAt !== undefined) query = query.where(spec.processedAt.name, "is", null);
  query = spec.group === undefined ? query.groupBy(attempt) : query.groupBy([spec.group.name, attempt]).orderBy(spec.group.name);
  return compiled(query.orderBy(attempt));
}

/**
 * The live leases of rows not done that run out after `now` and by `until`, soonest first (id
 * breaks ties), at most `limit` of them. For a table with a lease column.
 */
export function expiringLeasesQuery(ctx: StatementContext, spec: InboxDescription, now: Date, until: Date, limit: number): CompiledQuery<RawRow> {
  const lease = spec.lease?.name ?? notForTable("operator.expiringLeases", "it has no lease column", { table: spec.table });
  let query = ctx.db
    .selectFrom(spec.table)
    .select((eb: Eb) => [
      eb.ref(spec.id.name).as("id"),
      groupAs(spec)(eb),
      eb.ref(lease).as("locked_until"),
      spec.attempt === undefined ? eb.lit(null).as("attempt") : eb.ref(spec.attempt.name).as("attempt"),
    ])
    .where(lease, ">", ctx.time.encode(now, COMPARE_PRECISION))
    .where(lease, "<=", ctx.time.encode(until, COMPARE_PRECISION));
  if (spec.processedAt !== undefined) query = query.where(spec.processedAt.name, "is", null);
  return compiled(query.orderBy(lease).orderBy(spec.id.name).limit(limit));
}
