import { dialectFor } from "@sqlinbox/kysely-dialects";
import { deliveredAttempt } from "@sqlinbox/kysely-dialects/internal";
import { hasHeads, operatorFor, waitingOf } from "@sqlinbox/kysely-dialects/operator";
import type { AttemptBucket, CappedCount, DeadLetterTarget, ExpiringLease, GroupStatus, TableStatus } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";
import { type CountPlan, DEFAULT_COUNTING, planCounts, readCappedCounts, type StatusCounting } from "./capped.js";
import { countInWork, groupKey } from "./in-work.js";
import { readLimits } from "./limits.js";
import { readSettled } from "./settled.js";

const n = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/** Options of a status read. */
export interface StatusOptions {
  readonly now: Date;
  /** Processed rows are counted from here (exclusive) to `now`. */
  readonly since: Date;
  /** Leases that run out within this many milliseconds are listed. */
  readonly expiringWithinMs: number;
  readonly expiringLimit: number;
  /** When a table counts as large, and how far each of its counts reads (`DEFAULT_COUNTING`). */
  readonly counting?: StatusCounting;
}

/**
 * Reads one table's status: one counting pass, the attempts histogram, the expiring leases,
 * the dead letters and the rows in work (per form, see `countInWork`).
 */
export async function readTableStatus(opened: OpenedDatabase, table: QueueTable, options: StatusOptions): Promise<TableStatus> {
  const ops = operatorFor(opened.engine);
  const time = dialectFor(opened.engine).time;
  const { spec } = table;
  const { now } = options;
  const exec = async (query: Parameters<typeof opened.db.executeQuery>[0]) => (await opened.db.executeQuery(query)).rows as Record<string, unknown>[];

  const plan = await planCounts(opened, table, options.counting ?? DEFAULT_COUNTING);
  const capped = plan.kind === "capped" ? await readCappedCounts(opened, table, plan, now) : null;
  const atLeast = new Set<CappedCount>(capped?.atLeast ?? []);
  const counts = capped?.counts ?? (await exec(ops.countByState({ spec, createdAt: table.createdAt }, now)));
  const deadGroups = new Set(table.deadLetters.flatMap((p) => (p.kind === "group" ? [p.deadGroup] : [])));
  const live = counts.filter((r) => !deadGroups.has(groupKey(r.grp)));

  const dead = new Map<string, number>();
  for (const place of table.deadLetters) {
    const query = plan.kind === "capped" ? ops.cappedCountDeadLetters(spec, place, plan.cap) : ops.countDeadLetters(spec, place);
    let placeRows = 0;
    for (const row of await exec(query)) {
      const group = place.kind === "group" ? place.group : spec.group === undefined ? "" : groupKey(row.grp);
      dead.set(group, (dead.get(group) ?? 0) + n(row.rows));
      placeRows += n(row.rows);
    }
    if (plan.kind === "capped" && placeRows >= plan.cap) atLeast.add("dead");
  }

  const claimable = new Map(live.map((r) => [groupKey(r.grp), n(r.claimable)]));
  const inWork = await countInWork(opened, table, claimable, now, plan.kind === "capped" ? { cap: plan.cap, sampleFull: atLeast.has("ready") } : undefined);
  if (inWork !== null && "atLeast" in inWork && inWork.atLeast) atLeast.add("inWork");
  const notes: string[] = [];
  if (plan.kind === "capped") notes.push(cappedNote(plan, atLeast));
  if (inWork !== null && "unknown" in inWork) notes.push(inWork.unknown);
  if (table.createdAt === undefined) notes.push("oldest: unknown (the table has no created_at column)");
  if (table.deadLetters.length === 0) notes.push("dead letters: none declared (--module deadLetters, --dead-letter-table or --dead-letter-group)");

  const histogram = new Map<string, AttemptBucket[]>();
  if (spec.attempt !== undefined) {
    for (const row of capped?.histogram ?? (await exec(ops.attemptHistogram(spec)))) {
      const g = groupKey(row.grp);
      if (deadGroups.has(g)) continue;
      // Attempts made: what a delivery of the row reads (deliveredAttempt: a row never claimed holds 1
      // and has made 0). A row-lock delivery in work counts once it commits: its claim's increment is
      // not visible outside its transaction.
      histogram.set(g, [...(histogram.get(g) ?? []), { attempt: deliveredAttempt(row.attempt), rows: n(row.rows) }]);
    }
  }

  const groupNames = new Set([...live.map((r) => groupKey(r.grp)), ...dead.keys()]);
  const groups: GroupStatus[] = [...groupNames].sort().map((g) => {
    const row = live.find((r) => groupKey(r.grp) === g);
    const ready = n(row?.claimable);
    const working = inWork === null ? n(row?.leased) : "unknown" in inWork ? null : (inWork.byGroup.get(g) ?? 0);
    const oldest = row?.oldest === null || row?.oldest === undefined ? null : time.decode(row.oldest);
    return {
      group: spec.group === undefined ? null : g,
      // Row-lock and advisory rows in work still read as claimable by state: take them out.
      ready: inWork === null || "unknown" in inWork ? ready : Math.max(0, ready - (working ?? 0)),
      inWork: working,
      waiting: hasHeads(spec) ? (row === undefined ? 0 : waitingOf(spec, row)) : null,
      delayed: n(row?.delayed),
      done: spec.processedAt === undefined ? null : n(row?.done),
      dead: table.deadLetters.length === 0 ? null : (dead.get(g) ?? 0),
      oldestAgeMs: oldest === null ? null : Math.max(0, now.getTime() - oldest.getTime()),
      attempts: histogram.get(g) ?? [],
    };
  });

  const expiring: ExpiringLease[] = [];
  // A sample with no live lease has none that runs out: a large table skips the second read of its sample.
  const sampledLeases = capped === null || counts.some((r) => n(r.leased) > 0);
  if (spec.lease !== undefined && sampledLeases) {
    const horizon = new Date(now.getTime() + options.expiringWithinMs);
    const query =
      plan.kind === "capped"
        ? ops.sampledExpiringLeases({ spec, createdAt: table.createdAt }, now, horizon, options.expiringLimit, plan.cap)
        : ops.expiringLeases(spec, now, horizon, options.expiringLimit);
    for (const row of await exec(query)) {
      const until = time.decode(row.locked_until) ?? now;
      expiring.push({
        id: String(row.id),
        group: row.grp === null || row.grp === undefined ? null : String(row.grp),
        lockedUntil: until.toISOString(),
        expiresInMs: until.getTime() - now.getTime(),
        // The attempt the holder is delivering, as its handler reads it (deliveredAttempt).
        attempt: row.attempt === null || row.attempt === undefined ? null : deliveredAttempt(row.attempt),
      });
    }
  }

  const sum = (pick: (g: GroupStatus) => number | null): number | null =>
    groups.some((g) => pick(g) === null) && groups.length > 0 ? null : groups.reduce((a, g) => a + (pick(g) ?? 0), 0);
  const ages = groups.map((g) => g.oldestAgeMs).filter((a): a is number => a !== null);
  const limits = await readLimits(opened, table, groups, now, notes);
  return {
    table: spec.table,
    form: spec.form,
    groups,
    totals: {
      ready: sum((g) => g.ready) ?? 0,
      inWork: sum((g) => g.inWork),
      waiting: hasHeads(spec) ? sum((g) => g.waiting) : null,
      delayed: sum((g) => g.delayed) ?? 0,
      done: spec.processedAt === undefined ? null : sum((g) => g.done),
      dead: table.deadLetters.length === 0 ? null : sum((g) => g.dead),
      oldestAgeMs: ages.length === 0 ? null : Math.max(...ages),
    },
    expiringLeases: expiring,
    settled: await readSettled(opened, table, options.since, now),
    deadLetters: table.deadLetters.map(
      (p): DeadLetterTarget => (p.kind === "table" ? { kind: "table", table: p.destination.table } : { kind: "group", group: p.group, deadGroup: p.deadGroup }),
    ),
    notes,
    ...(limits === undefined ? {} : { limits }),
    ...(plan.kind === "capped" ? { capped: { cap: plan.cap, estimatedRows: plan.estimatedRows, atLeast: CAPPED_ORDER.filter((c) => atLeast.has(c)) } } : {}),
  };
}

const CAPPED_ORDER: readonly CappedCount[] = ["ready", "waiting", "inWork", "delayed", "done", "dead", "oldestAgeMs", "attempts", "expiringLeases"];

/** What a capped read did, in words: the estimate, the cap, and which numbers are lower bounds. */
function cappedNote(plan: Extract<CountPlan, { kind: "capped" }>, atLeast: ReadonlySet<CappedCount>): string {
  const cap = plan.cap.toLocaleString("en-US");
  const head = `large table (about ${plan.estimatedRows.toLocaleString("en-US")} rows by its ids): each count read through an index, up to ${cap} rows`;
  if (atLeast.size === 0) return `${head}; none reached it, so every number is exact`;
  return `${head}; a number shown with + reached it and is a lower bound (${CAPPED_ORDER.filter((c) => atLeast.has(c)).join(", ")}); the rows not done are told apart among the first ${cap} in claim order`;
}
