import { advisoryKeyOf, dialectFor } from "@sqlinbox/kysely-dialects/internal";
import { operatorFor } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";

/**
 * Rows in work per group (`""` for a table without groups), `atLeast` when only part of the table
 * was probed (a large table); `unknown` with the reason when it cannot be known.
 */
export type InWork = { readonly byGroup: ReadonlyMap<string, number>; readonly atLeast?: boolean } | { readonly unknown: string };

/** A large table's probe: at most `cap` rows, and whether its ready rows already passed the cap (the sample was full). */
export interface BoundedProbe {
  readonly cap: number;
  readonly sampleFull: boolean;
}

/** The advisory candidates read at most: keys past them are not looked up. */
const ADVISORY_CANDIDATES_MAX = 10_000;

export const groupKey = (group: unknown): string => (group === null || group === undefined ? "" : String(group));

/**
 * How many rows are in work, per form:
 * - lease: rows with a live lease (counted by `countByState`, so nothing to do here: `leased`);
 * - row lock: ready rows that a `FOR UPDATE SKIP LOCKED` probe cannot take, in a transaction
 *   rolled back at once (the probe holds the rows it takes for that moment only);
 * - advisory: keys of ready rows whose lock a session holds (`pg_locks`, `IS_USED_LOCK`);
 *   on SQLite the locks live in the application's process: unknown from outside.
 */
export async function countInWork(opened: OpenedDatabase, table: QueueTable, claimable: ReadonlyMap<string, number>, now: Date, bounded?: BoundedProbe): Promise<InWork | null> {
  const ops = operatorFor(opened.engine);
  const { spec } = table;
  if (spec.form === "lease") return null;
  const { capabilities } = dialectFor(opened.engine);
  if (spec.form === "rowLock") {
    if (!capabilities.rowLock) return { unknown: "in work: SQLite has no row locks" };
    // A probe locks each ready row it reads: on a large table, only while they are fewer than the cap.
    if (bounded?.sampleFull === true) {
      return { unknown: `in work: not probed (a large table with over ${bounded.cap.toLocaleString("en-US")} rows not done: the probe would lock each ready row)` };
    }
    const probe = ops.lockableProbe(spec, now, bounded?.cap);
    // The isolation a claim opens with: under MySQL's REPEATABLE READ the probe would also take gap locks.
    const isolation = capabilities.claimIsolation;
    const trx = await (isolation === undefined ? opened.db.startTransaction() : opened.db.startTransaction().setIsolationLevel(isolation)).execute();
    let lockable: readonly { grp?: unknown }[];
    try {
      lockable = (await trx.executeQuery(probe)).rows;
    } finally {
      await trx.rollback().execute();
    }
    const free = new Map<string, number>();
    for (const row of lockable) free.set(groupKey(row.grp), (free.get(groupKey(row.grp)) ?? 0) + 1);
    return { byGroup: new Map([...claimable].map(([g, n]) => [g, Math.max(0, n - (free.get(g) ?? 0))])) };
  }
  if (capabilities.advisoryLocks === "process") {
    return { unknown: "in work: unknown from outside (advisory keys on SQLite live in the application's process)" };
  }
  const limit = Math.min(ADVISORY_CANDIDATES_MAX, bounded?.cap ?? ADVISORY_CANDIDATES_MAX);
  const candidates = (await opened.db.executeQuery(ops.advisoryCandidates(spec, now, limit, bounded === undefined ? "id" : "claim"))).rows;
  const keyGroup = new Map<string, string>();
  for (const row of candidates) keyGroup.set(advisoryKeyOf(spec, row), groupKey(row.grp));
  const held = new Set<string>();
  const keys = [...keyGroup.keys()];
  for (let i = 0; i < keys.length; i += 500) {
    for (const row of (await opened.db.executeQuery(ops.heldAdvisoryKeys(keys.slice(i, i + 500), opened.database))).rows) held.add(row.key);
  }
  const byGroup = new Map<string, number>();
  for (const key of held) byGroup.set(keyGroup.get(key) ?? "", (byGroup.get(keyGroup.get(key) ?? "") ?? 0) + 1);
  // A large table's keys past the candidates were not looked up.
  return bounded === undefined ? { byGroup } : { byGroup, atLeast: bounded.sampleFull || candidates.length >= limit };
}
