/**
 * `app.cron(…)` across real processes, on every engine (SQLite: one file shared by the processes):
 * three processes run the same app with a tick every second. For 7 s, every tick is published by
 * each of the three and its row exists once (one insert made it, the key refused the others). Then a
 * restart: with `catchUp`, one process SIGKILLed, then all of them, then three new ones started: no
 * tick is lost, none is doubled, the ticks missed while every process was down included.
 */
import { describe, expect, test } from "vitest";
import { sql } from "kysely";
import { createControlTable, createInboxTable } from "../../src/index.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { dropScope, scopedUrl, startFixture, type WorkerProcess } from "../support/claim-forms.js";
import { type CronLine, deletingTickSpec, readTicks, tickSpec } from "../support/cron-tables.js";
import { engines, unique, type TestEngine } from "../support/engines.js";
import { sleep } from "../support/sleep.js";

const tickOf = (key: string): number => new Date(key.slice("cron:ticks:".length)).getTime();
const linesOf = (p: WorkerProcess): CronLine[] => p.lines as unknown as CronLine[];

function startCronWorker(url: string, table: string, catchUp: number, deletes = false): WorkerProcess {
  return startFixture("test/support/fixtures/cron-worker.ts", {
    CRON_URL: url,
    CRON_TABLE: table,
    CRON_PATTERN: "* * * * * *",
    CRON_CATCHUP: String(catchUp),
    CRON_DELETES: deletes ? "1" : "0",
  });
}

async function startThree(url: string, table: string, catchUp: number, into: WorkerProcess[], deletes = false): Promise<WorkerProcess[]> {
  const started = [0, 1, 2].map(() => startCronWorker(url, table, catchUp, deletes));
  into.push(...started);
  await Promise.all(started.map((p) => p.waitFor((l) => l.event === "ready", 60_000, "ready")));
  return started;
}

/** Rows per key in the table (the unique index allows one; this reads it from the table, not the index). */
async function countsByKey(db: AnyKysely, table: string): Promise<Map<string, number>> {
  const { rows } = await sql<{ job_key: string; n: unknown }>`SELECT job_key, COUNT(*) AS n FROM ${sql.id(table)} GROUP BY job_key`.execute(db);
  return new Map(rows.map((r) => [r.job_key, Number(r.n)]));
}

/** A URL whose connections see a database (MariaDB), a schema (Postgres: its search path) or a file (SQLite) of their own. */
async function noControlUrl(engine: TestEngine, base: AnyKysely, scope: string): Promise<string> {
  if (engine.engine !== "postgres") return scopedUrl(engine, base, scope);
  await sql`CREATE SCHEMA ${sql.id(scope)}`.execute(base);
  const url = engine.url();
  return `${url}${url.includes("?") ? "&" : "?"}options=${encodeURIComponent(`-c search_path=${scope}`)}`;
}

/** How long three processes tick side by side: every tick of it but the first and last second is checked. */
const RUN_MS = 7000;

/** The keys' ticks step by exactly one second from the first to the last: no tick missing. */
function gaps(ticks: readonly number[]): number[] {
  return ticks.slice(1).flatMap((t, i) => (t - (ticks[i] as number) === 1000 ? [] : [ticks[i] as number]));
}

describe.each(engines)("app.cron in three processes on $name", (engine: TestEngine) => {
  test("a tick every second for 7 s: each tick published by all three, one row per tick, one insert made it", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_three");
    const processes: WorkerProcess[] = [];
    try {
      await createInboxTable(db, tickSpec(table));
      await startThree(url, table, 0, processes);
      const ready = Date.now();
      await sleep(RUN_MS);
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
      expect(window.length).toBeGreaterThanOrEqual(RUN_MS / 1000 - 3);
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
      expect(rows.filter((r) => tickOf(r.key) < stopping - 3000 && !r.processed).map((r) => r.key)).toEqual([]);
      console.log(`${engine.name}: ${rows.length} ticks, ${window.length} in the window each published by all three processes`);
    } finally {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 150_000);

  /** Three processes on a table whose ack deletes the row, for 7 s: how many rows each tick got (one per insert that made one). */
  async function threeOnDeletingTable(url: string, db: AnyKysely, table: string, processes: WorkerProcess[]) {
    await createInboxTable(db, deletingTickSpec(table));
    await startThree(url, table, 0, processes, true);
    const ready = Date.now();
    await sleep(RUN_MS);
    const stopping = Date.now();
    for (const p of processes) p.child.kill("SIGTERM");
    await Promise.all(processes.map((p) => p.exited));
    const made = new Map<string, number>();
    for (const line of processes.flatMap(linesOf)) if (line.event === "tick" && line.created === true) made.set(line.key as string, (made.get(line.key as string) ?? 0) + 1);
    const ticks = [...made.keys()].map(tickOf).sort((a, b) => a - b);
    expect(ticks.filter((t) => t > ready + 1000 && t < stopping - 1000).length).toBeGreaterThanOrEqual(RUN_MS / 1000 - 3);
    expect(gaps(ticks)).toEqual([]);
    return { made, doubled: [...made].filter(([, n]) => n > 1) };
  }

  test("on a table whose ack deletes the row, with the control table: each tick is marked there as it is published, and runs once", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("cron_deletes");
    const processes: WorkerProcess[] = [];
    try {
      await createControlTable(db);
      const { made, doubled } = await threeOnDeletingTable(url, db, table, processes);
      // A deadlock retried (MariaDB: inserts of one key beside deletes) is logged as a warning, and harmless.
      expect(processes.flatMap((p) => linesOf(p).filter((l) => l.event === "error" && l.message !== "deadlock retried"))).toEqual([]);
      console.log(`${engine.name}, ack deletes, marked: ${made.size} ticks, ${doubled.length} made more than once`);
      expect(doubled).toEqual([]);
      // The marks of old ticks are pruned: a dozen at most are left for the route.
      const marks = await db.selectFrom("sqlinbox_control").select("target").where("kind", "=", "cron").where("route", "=", "ticks").execute();
      expect(marks.length).toBeLessThanOrEqual(13);
    } finally {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 150_000);

  test("on a table whose ack deletes the row, without the control table: each process warns once that a late process publishes a handled tick again", async () => {
    // A database (MariaDB), a schema (Postgres) or a file (SQLite) of its own: no control table there, and other tests keep theirs.
    const base = await engine.connect(engine.url());
    const scope = unique("cron_nocontrol").toLowerCase();
    const url = await noControlUrl(engine, base, scope);
    const db = await engine.connect(url);
    const table = unique("cron_deletes_unmarked");
    const processes: WorkerProcess[] = [];
    try {
      const { made, doubled } = await threeOnDeletingTable(url, db, table, processes);
      console.log(
        `${engine.name}, ack deletes, unmarked: ${made.size} ticks, ${doubled.length} made more than once (${doubled.map(([k, n]) => `${k.slice(-13)} ×${n}`).join(", ")})`,
      );
      for (const p of processes) {
        const problems = linesOf(p).filter((l) => l.event === "error" && l.message !== "deadlock retried");
        expect(
          problems.map((l) => l.message),
          JSON.stringify(problems),
        ).toEqual([
          "cron on a table whose ack deletes the row, without the control table: a process that publishes a tick after its row was handled publishes it again; create the control table (createControlTable) or give the table a processedAt column",
        ]);
      }
    } finally {
      for (const p of processes) if (p.child.exitCode === null) p.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
      if (engine.engine === "postgres") await sql`DROP SCHEMA IF EXISTS ${sql.id(scope)} CASCADE`.execute(base);
      else await dropScope(engine, base, scope);
      await base.destroy();
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
