/**
 * `app.cron(…)` across real processes, on every engine (SQLite: one file shared by the processes):
 * three processes run the same app with a tick every second. For 10 s, every tick is published by
 * each of the three and its row exists once (one insert made it, the key refused the others). Then a
 * restart: with `catchUp`, one process SIGKILLed, then all of them, then three new ones started: no
 * tick is lost, none is doubled, the ticks missed while every process was down included.
 */
import { afterAll, describe, expect, test } from "vitest";
import { sql } from "kysely";
import { createInboxTable } from "../src/index.js";
import type { AnyKysely } from "../src/drivers/database.js";
import { startFixture, type WorkerProcess } from "./claim-forms.js";
import { type CronLine, readTicks, tickSpec } from "./cron-tables.js";
import { engines, unique, type TestEngine } from "./engines.js";

afterAll(() => {
  for (const e of engines) e.cleanup();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const tickOf = (key: string): number => new Date(key.slice("cron:ticks:".length)).getTime();
const linesOf = (p: WorkerProcess): CronLine[] => p.lines as unknown as CronLine[];

function startCronWorker(url: string, table: string, catchUp: number): WorkerProcess {
  return startFixture("test/fixtures/cron-worker.ts", { CRON_URL: url, CRON_TABLE: table, CRON_PATTERN: "* * * * * *", CRON_CATCHUP: String(catchUp) });
}

async function startThree(url: string, table: string, catchUp: number, into: WorkerProcess[]): Promise<WorkerProcess[]> {
  const started = [0, 1, 2].map(() => startCronWorker(url, table, catchUp));
  into.push(...started);
  await Promise.all(started.map((p) => p.waitFor((l) => l.event === "ready", 60_000, "ready")));
  return started;
}

/** Rows per key in the table (the unique index allows one; this reads it from the table, not the index). */
async function countsByKey(db: AnyKysely, table: string): Promise<Map<string, number>> {
  const { rows } = await sql<{ job_key: string; n: unknown }>`SELECT job_key, COUNT(*) AS n FROM ${sql.id(table)} GROUP BY job_key`.execute(db);
  return new Map(rows.map((r) => [r.job_key, Number(r.n)]));
}

/** The keys' ticks step by exactly one second from the first to the last: no tick missing. */
function gaps(ticks: readonly number[]): number[] {
  return ticks.slice(1).flatMap((t, i) => (t - (ticks[i] as number) === 1000 ? [] : [ticks[i] as number]));
}

describe.each(engines)("app.cron in three processes on $name", (engine: TestEngine) => {
  test("a tick every second for 10 s: each tick published by all three, one row per tick, one insert made it", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_three");
    const processes: WorkerProcess[] = [];
    try {
      await createInboxTable(db, tickSpec(table));
      await startThree(url, table, 0, processes);
      const ready = Date.now();
      await sleep(10_000);
      const stopping = Date.now();
      for (const p of processes) p.child.kill("SIGTERM");
      await Promise.all(processes.map((p) => p.exited));

      expect(processes.flatMap((p) => linesOf(p).filter((l) => l.event === "error"))).toEqual([]);
      const counts = await countsByKey(db, table);
      const rows = await readTicks(db, table);
      const ticks = rows.map((r) => tickOf(r.key));
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      expect(gaps(ticks)).toEqual([]);
      // The ticks every process was running for (a margin of a second at each end, for the load).
      const window = ticks.filter((t) => t > ready + 1000 && t < stopping - 1000);
      expect(window.length).toBeGreaterThanOrEqual(7);
      for (const tick of window) {
        const key = `cron:ticks:${new Date(tick).toISOString()}`;
        const published = processes.map((p) => linesOf(p).filter((l) => l.event === "tick" && l.key === key));
        expect(
          published.map((lines) => lines.length),
          key,
        ).toEqual([1, 1, 1]);
        expect(
          published.flat().filter((l) => l.created === true),
          key,
        ).toHaveLength(1);
      }
      // Every row any process made, it made once: created is true once per key across the three.
      const created = processes.flatMap((p) =>
        linesOf(p)
          .filter((l) => l.event === "tick" && l.created === true)
          .map((l) => l.key),
      );
      expect([...created].sort()).toEqual(rows.map((r) => r.key));
      // And the handlers took the ticks well inside the run.
      expect(rows.filter((r) => tickOf(r.key) < stopping - 5000 && !r.processed).map((r) => r.key)).toEqual([]);
      console.log(`${engine.name}: ${rows.length} ticks, ${window.length} in the window each published by all three processes`);
    } finally {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 150_000);

  test("with catchUp: one process SIGKILLed, then all, then three new ones: every tick once, the ticks missed while all were down included", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_restart");
    const processes: WorkerProcess[] = [];
    const CATCH_UP = 60;
    try {
      await createInboxTable(db, tickSpec(table));
      const first = await startThree(url, table, CATCH_UP, processes);
      await sleep(3000);
      first[0]?.child.kill("SIGKILL");
      await first[0]?.exited;
      await sleep(2000);
      for (const p of first.slice(1)) p.child.kill("SIGKILL");
      await Promise.all(first.map((p) => p.exited));
      const allDown = Date.now();
      const before = (await readTicks(db, table)).map((r) => tickOf(r.key));
      await sleep(2000);
      const second = await startThree(url, table, CATCH_UP, processes);
      const upAgain = Date.now();
      await sleep(3000);
      for (const p of second) p.child.kill("SIGTERM");
      await Promise.all(second.map((p) => p.exited));

      expect(processes.flatMap((p) => linesOf(p).filter((l) => l.event === "error"))).toEqual([]);
      const counts = await countsByKey(db, table);
      expect([...counts.entries()].filter(([, n]) => n !== 1)).toEqual([]);
      const ticks = (await readTicks(db, table)).map((r) => tickOf(r.key));
      expect(gaps(ticks)).toEqual([]);
      // The seconds while no process ran (after the last row of the first three, to the second start) are there,
      // and the schedule went on after the restart.
      const lastBefore = Math.max(...before);
      const missed = ticks.filter((t) => t > lastBefore && t <= upAgain - 1000);
      expect(missed.length).toBeGreaterThanOrEqual(Math.floor((upAgain - allDown) / 1000) - 1);
      expect(Math.max(...ticks)).toBeGreaterThan(upAgain + 1000);
      // Made by the second three at their start: the catch-up.
      const madeBySecond = new Set(
        second.flatMap((p) =>
          linesOf(p)
            .filter((l) => l.event === "tick" && l.created === true)
            .map((l) => l.key),
        ),
      );
      for (const t of missed) expect(madeBySecond.has(`cron:ticks:${new Date(t).toISOString()}`)).toBe(true);
      console.log(`${engine.name}: ${ticks.length} ticks; ${missed.length} missed while every process was down, published by the catch-up`);
    } finally {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 180_000);
});
