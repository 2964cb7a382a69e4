/**
 * No double delivery: two apps in two worker processes drain 1,000 rows together, on every
 * engine × form, and each row is handled exactly once. (SQLite advisory is left out by
 * design: its keys live in the process, so one SQLite file serves one process.)
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { unique } from "../support/engines.js";
import { createJobsTable, insertJobs, matrix, readJobs, startWorker, until, type WorkerProcess } from "../support/claim-forms.js";

const ROWS = 1000;
const pairs = matrix.filter(({ engine, form }) => !(engine.engine === "sqlite" && form === "advisory"));

describe.each(pairs)("two processes on $engine.name × $form", ({ engine, form }) => {
  let db: AnyKysely;
  let url: string;
  const table = unique(`two_${form}`).toLowerCase();
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    url = engine.url();
    db = await engine.connect(url);
    await createJobsTable(engine, db, table);
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
    await engine.dropTable(db, table);
    await db.destroy();
    engine.cleanup();
  });

  test(`${ROWS} rows, each handled once`, async () => {
    await insertJobs(db, table, ROWS);
    for (let i = 0; i < 2; i++) workers.push(startWorker({ url, table, form, workers: 4, holdMs: 0 }));
    await Promise.all(workers.map((w) => w.waitFor((l) => l.event === "ready", 20_000, "ready")));
    await until(async () => (await readJobs(db, table)).length === 0, 60_000, "the table to drain");
    for (const w of workers) w.child.kill("SIGTERM");
    await Promise.all(workers.map((w) => w.exited));
    const handled = workers.flatMap((w) => w.lines.filter((l) => l.event === "start").map((l) => l.n as number));
    const counts = new Map<number, number>();
    for (const n of handled) counts.set(n, (counts.get(n) ?? 0) + 1);
    const twice = [...counts].filter(([, c]) => c > 1).map(([n]) => n);
    expect(twice).toEqual([]);
    expect(counts.size).toBe(ROWS);
    expect(workers.flatMap((w) => w.lines.filter((l) => l.event === "error"))).toEqual([]);
    const split = workers.map((w) => w.lines.filter((l) => l.event === "start").length).join(" + ");
    const deadlocks = workers.reduce((sum, w) => sum + (w.lines.find((l) => l.event === "stopped")?.deadlocks ?? 0), 0);
    console.log(`${engine.name} × ${form}: ${ROWS} rows = ${split}; ${deadlocks} deadlocks retried`);
  });
});
