import { dialectFor } from "@sqlinbox/kysely-dialects";
import { deliveredAttempt } from "@sqlinbox/kysely-dialects/internal";
import { hasHeads, operatorFor, waitingOf } from "@sqlinbox/kysely-dialects/operator";
import type { AttemptBucket, DeadLetterTarget, ExpiringLease, GroupStatus, TableStatus } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";
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

  const counts = await exec(ops.countByState({ spec, createdAt: table.createdAt }, now));
  const deadGroups = new Set(table.deadLetters.flatMap((p) => (p.kind === "group" ? [p.deadGroup] : [])));
  const live = counts.filter((r) => !deadGroups.has(groupKey(r.grp)));

  const dead = new Map<string, number>();
  for (const place of table.deadLetters) {
    for (const row of await exec(ops.countDeadLetters(spec, place))) {
      const group = place.kind === "group" ? place.group : spec.group === undefined ? "" : groupKey(row.grp);
      dead.set(group, (dead.get(group) ?? 0) + n(row.rows));
    }
  }

  const claimable = new Map(live.map((r) => [groupKey(r.grp), n(r.claimable)]));
  const inWork = await countInWork(opened, table, claimable, now);
  const notes: string[] = [];
  if (inWork !== null && "unknown" in inWork) notes.push(inWork.unknown);
  if (table.createdAt === undefined) notes.push("oldest: unknown (the table has no created_at column)");
  if (table.deadLetters.length === 0) notes.push("dead letters: none declared (--module deadLetters, --dead-letter-table or --dead-letter-group)");

  const histogram = new Map<string, AttemptBucket[]>();
  if (spec.attempt !== undefined) {
    for (const row of await exec(ops.attemptHistogram(spec))) {
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
  if (spec.lease !== undefined) {
    for (const row of await exec(ops.expiringLeases(spec, now, new Date(now.getTime() + options.expiringWithinMs), options.expiringLimit))) {
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
  };
}
