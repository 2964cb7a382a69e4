import type { CappedCount } from "@sqlinbox/dashboard";
import { dialectFor, type TimeCodec } from "@sqlinbox/kysely-dialects";
import { hasHeads, operatorFor } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";
import { groupKey } from "./in-work.js";

/** A table whose estimated rows reach `largeRows` has each count read through an index up to `cap` rows. */
export interface StatusCounting {
  readonly largeRows: number;
  readonly cap: number;
}

/** At 100,000 rows a full pass costs tens of milliseconds; 10,000 rows read through an index cost a few. */
export const DEFAULT_COUNTING: StatusCounting = { largeRows: 100_000, cap: 10_000 };

/** How a status read counts a table: one pass over every row, or capped reads through indexes. */
export type CountPlan = { readonly kind: "exact" } | { readonly kind: "capped"; readonly cap: number; readonly estimatedRows: number };

/**
 * Whether the table is large: `max(id) − min(id) + 1`, read from both ends of the primary key, reaches
 * `counting.largeRows`. Rows deleted in between make it an overestimate, which only means a mid-sized
 * table gets capped counts (exact while under the cap). Ids that are not numbers (text, UUID) give no
 * estimate: such a table keeps the one-pass count.
 */
export async function planCounts(opened: OpenedDatabase, table: QueueTable, counting: StatusCounting): Promise<CountPlan> {
  const [row] = (await opened.db.executeQuery(operatorFor(opened.engine).rowSpan(table.spec))).rows as Record<string, unknown>[];
  const lo = Number(row?.lo ?? Number.NaN);
  const hi = Number(row?.hi ?? Number.NaN);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return { kind: "exact" };
  const estimatedRows = hi - lo + 1;
  return estimatedRows >= counting.largeRows ? { kind: "capped", cap: counting.cap, estimatedRows } : { kind: "exact" };
}

/**
 * A large table's counts in `countByState`'s shape: the sample of the first `cap` rows not done
 * (`sampledState`), with each group's done rows (`cappedDone`, up to `cap` in all) put beside them.
 * `atLeast`: the counts that reached the cap.
 */
export async function readCappedCounts(
  opened: OpenedDatabase,
  table: QueueTable,
  plan: Extract<CountPlan, { kind: "capped" }>,
  now: Date,
): Promise<{ counts: Record<string, unknown>[]; histogram: Record<string, unknown>[]; atLeast: CappedCount[] }> {
  const ops = operatorFor(opened.engine);
  const { spec } = table;
  const byAttempt = (await opened.db.executeQuery(ops.sampledState({ spec, createdAt: table.createdAt }, now, plan.cap))).rows as Record<string, unknown>[];
  const counts = sumGroups(byAttempt, dialectFor(opened.engine).time);
  // The attempts histogram's rows (`grp`, `attempt`, `rows`), in group then attempt order, as `attemptHistogram` gives them.
  const histogram =
    spec.attempt === undefined
      ? []
      : byAttempt
          .map((r) => ({ grp: r.grp, attempt: r.attempt, rows: r.total }))
          .sort((a, b) => groupKey(a.grp).localeCompare(groupKey(b.grp)) || Number(a.attempt) - Number(b.attempt));
  const atLeast: CappedCount[] = [];
  const sampled = counts.reduce((sum, r) => sum + Number(r.sampled ?? 0), 0);
  if (sampled >= plan.cap) {
    // Only what the table can have: a table without retryAfter has no delayed rows at all, exactly.
    atLeast.push("ready");
    if (hasHeads(spec)) atLeast.push("waiting");
    if (spec.lease !== undefined) atLeast.push("inWork", "expiringLeases");
    if (spec.retryAfter !== undefined) atLeast.push("delayed");
    if (table.createdAt !== undefined) atLeast.push("oldestAgeMs");
    if (spec.attempt !== undefined) atLeast.push("attempts");
  }
  if (spec.processedAt !== undefined) {
    const done = (await opened.db.executeQuery(ops.cappedDone(spec, plan.cap))).rows as Record<string, unknown>[];
    let doneRows = 0;
    for (const row of done) {
      const g = groupKey(row.grp);
      const found = counts.find((r) => groupKey(r.grp) === g);
      if (found === undefined)
        counts.push({ grp: row.grp, sampled: 0, total: 0, done: row.rows, leased: 0, delayed: 0, claimable: 0, due: 0, oldest: null, max_attempt: null, max_id: null });
      else found.done = row.rows;
      doneRows += Number(row.rows);
    }
    if (doneRows >= plan.cap) atLeast.push("done");
  }
  counts.sort((a, b) => groupKey(a.grp).localeCompare(groupKey(b.grp)));
  return { counts, histogram, atLeast };
}

const SUMMED = ["sampled", "total", "leased", "delayed", "claimable", "due"] as const;

/** `sampledState`'s rows per group and attempt, summed per group in `countByState`'s shape (the oldest the earliest, the maxima the largest). */
function sumGroups(rows: readonly Record<string, unknown>[], time: TimeCodec): Record<string, unknown>[] {
  const groups = new Map<string, Record<string, unknown>>();
  const larger = (a: unknown, b: unknown) => (a === null || a === undefined ? b : b === null || b === undefined ? a : Number(b) > Number(a) ? b : a);
  for (const row of rows) {
    const g = groupKey(row.grp);
    const sum = groups.get(g);
    if (sum === undefined) {
      groups.set(g, { ...row });
      continue;
    }
    for (const k of SUMMED) if (k in row) sum[k] = Number(sum[k] ?? 0) + Number(row[k] ?? 0);
    const [was, is] = [time.decode(sum.oldest), time.decode(row.oldest)];
    if (is !== null && (was === null || is < was)) sum.oldest = row.oldest;
    sum.max_attempt = larger(sum.max_attempt, row.max_attempt);
    sum.max_id = larger(sum.max_id, row.max_id);
  }
  return [...groups.values()];
}
