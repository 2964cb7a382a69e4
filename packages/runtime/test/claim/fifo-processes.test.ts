/**
 * FIFO across two OS processes, on every engine × form that has fifo: two worker processes
 * (`support/fixtures/fifo-worker.ts`), each with one subscription per group and `workers(4)`, drain
 * four groups whose priorities put claim order far from id order; while they drain, more rows
 * arrive with the worst priority (rows that no claim in work has locked, which a row-lock claim
 * must still keep behind the row in work). Each handler writes a
 * `start` and an `end` row into a results table, whose generated seq orders the events of both
 * processes: within a group the rows must run in claim order (priority, then id), each once,
 * and no row may start before the one before it ended.
 */
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { matrix, startFixture, until, type WorkerProcess } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createFifoTable, createResultsTable, groupRuns, insertFifoRows, readResults, type FifoRow } from "../support/fifo-tables.js";
import { sleep } from "../support/sleep.js";

const GROUPS = ["g0", "g1", "g2", "g3"] as const;
const PER_GROUP = 20;
/** Rows published per group while the groups drain, priority 9 (after every first row). */
const LATE = 10;

/** Row n of a group: priorities 0–3 spread so that claim order differs from id (n) order. */
function rowsOf(grp: string): FifoRow[] {
  return Array.from({ length: PER_GROUP }, (_, n) => ({ grp, n, priority: (n * 7 + grp.length) % 4 }));
}

/** Claim order of a group's rows: priority, then id (insert order, n). */
function claimOrderOf(rows: readonly FifoRow[]): number[] {
  return [...rows].sort((a, b) => (a.priority ?? 0) - (b.priority ?? 0) || a.n - b.n).map((r) => r.n);
}

describe.each(matrix.filter((m) => m.form !== "advisory"))("fifo across two processes on $engine.name × $form", ({ engine, form }) => {
  test(`${GROUPS.length} groups × ${PER_GROUP} rows (+${LATE} during the drain), two processes with workers(4) per group: claim order, one row per group in work`, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`fifo_two_${form}`).toLowerCase();
    const results = unique("fifo_results").toLowerCase();
    const children: WorkerProcess[] = [];
    try {
      await createFifoTable(engine, db, table);
      await createResultsTable(engine, db, results);
      // Interleaved across groups, so every group's ids are spread over the table.
      const byGroup = Object.fromEntries(GROUPS.map((g) => [g, rowsOf(g)]));
      const interleaved = Array.from({ length: PER_GROUP }, (_, n) => GROUPS.map((g) => byGroup[g]?.[n] as FifoRow)).flat();
      await insertFifoRows(db, table, interleaved);
      const started = Date.now();
      for (let i = 0; i < 2; i++) {
        children.push(
          startFixture("test/support/fixtures/fifo-worker.ts", { FIFO_URL: url, FIFO_FORM: form, FIFO_TABLE: table, FIFO_RESULTS: results, FIFO_GROUPS: GROUPS.join(",") }),
        );
      }
      await Promise.all(children.map((c) => c.waitFor((l) => l.event === "ready", 30_000, "ready")));
      const ready = Date.now();
      // Published during the drain, two per group at a time: rows no claim in work has locked.
      const late = Object.fromEntries(GROUPS.map((g) => [g, Array.from({ length: LATE }, (_, i) => ({ grp: g, n: PER_GROUP + i, priority: 9 }))]));
      for (let i = 0; i < LATE; i += 2) {
        await insertFifoRows(
          db,
          table,
          GROUPS.flatMap((g) => late[g]?.slice(i, i + 2) ?? []),
        );
        await sleep(150);
      }
      const total = GROUPS.length * (PER_GROUP + LATE);
      await until(async () => (await readResults(db, results)).filter((e) => e.event === "end").length >= total, 60_000, "every row handled");
      const drainMs = Date.now() - ready;
      const startMs = ready - started;
      for (const c of children) c.child.kill("SIGTERM");
      await Promise.all(children.map((c) => c.exited));

      const events = await readResults(db, results);
      for (const grp of GROUPS) {
        const { order, overlaps } = groupRuns(events, grp);
        expect(overlaps, grp).toEqual([]);
        expect(order, grp).toEqual(claimOrderOf([...(byGroup[grp] ?? []), ...(late[grp] ?? [])]));
      }
      // Both processes took part, and nothing was logged as an error.
      const pids = new Set(events.map((e) => e.pid));
      expect(pids.size).toBe(2);
      expect(children.flatMap((c) => c.lines.filter((l) => l.event === "error"))).toEqual([]);
      const split = children.map((c) => events.filter((e) => e.event === "start" && e.pid === c.child.pid).length).join(" + ");
      console.log(`${engine.name} × ${form}: processes ready in ${startMs} ms, then ${total} rows in ${drainMs} ms, split ${split}`);
    } finally {
      for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await engine.dropTable(db, results).catch(() => {});
      await db.destroy();
    }
  });
});
