/**
 * Two processes' worth of claimers (two apps, four workers and batches of four each) on one
 * table, on every engine: each row is delivered exactly once. On MariaDB, claim and settlement
 * deadlocks (InnoDB 1213) are retried inside and only show in the logs.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { HandlerOutcome } from "../../../src/index.js";
import { TestApp } from "../../../src/testing/index.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { engines, readRows, unique, type TestEngine } from "../../support/engines.js";
import { jobsApp } from "../../support/fixtures.js";

const ROWS = 80;

describe.each(engines)("concurrent claimers on $name", (engine: TestEngine) => {
  let url: string;
  let db: AnyKysely;
  const table = unique(`rt_conc_${engine.name}`);
  beforeAll(async () => {
    url = engine.url();
    db = await engine.connect(url);
    await engine.createLeaseTable(db, table);
  });
  afterAll(async () => {
    await engine.dropTable(db, table);
    await db.destroy();
    engine.cleanup();
  });

  test(`${ROWS} rows, two apps with 4 workers each: every row delivered exactly once`, async () => {
    const seen: number[] = [];
    const handler = async (job: { n: number }) => {
      seen.push(job.n);
      await new Promise((r) => setTimeout(r, 2));
      return HandlerOutcome.ack();
    };
    const a = jobsApp(url, table, handler, (q) => q.workers(4).batch(4).pollInterval(50));
    const b = jobsApp(url, table, handler, (q) => q.workers(4).batch(4).pollInterval(50));
    const tA = await TestApp.startLive(a.app);
    const tB = await TestApp.startLive(b.app);
    for (let n = 0; n < ROWS; n++) await (n % 2 ? tA : tB).publish("jobs", { n });
    await tA.waitFor(async () => seen.length >= ROWS && (await readRows(engine, db, table)).length === 0, 20_000, "every row to be settled");
    await tA.stop();
    await tB.stop();
    expect([...seen].sort((x, y) => x - y)).toEqual(Array.from({ length: ROWS }, (_, i) => i));
    const failures = [...tA.logs.records, ...tB.logs.records].filter((r) => r.level === "error");
    expect(failures).toEqual([]);
    const deadlocks = [...tA.logs.records, ...tB.logs.records].filter((r) => r.message === "deadlock retried").length;
    console.log(`${engine.name}: ${ROWS} rows, ${deadlocks} deadlocks retried`);
  });
});
