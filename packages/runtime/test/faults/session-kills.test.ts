/**
 * An outage as the app sees it, on every server engine × form: every session of the app is
 * killed from a separate setup connection every 100–200 ms for 2 s, during a drain of a few
 * thousand rows (8,000 on the advisory form, the backlog issue 9 measured). Then every row is handled, nothing stays stuck, and `stop()` returns within
 * its grace. The duplicates (rows delivered more than once) are printed per case.
 *
 * Runs in the `faults` project, after every other project, one file at a time.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { parseDatabaseUrl } from "../../src/drivers/index.js";
import { unique } from "../engines.js";
import { consumer, createJobsTable, dropScope, FORMS, insertJobs, scopedUrl, serverEngines, until } from "../claim-forms.js";

/** Rows per drain: the advisory form at the size of the backlogs issue 9 measured (8,000 rows). */
const ROWS_OF: Record<string, number> = { rowLock: 2000, lease: 2000, advisory: 8000 };
const FAULT_MS = 2000;
const GRACE_MS = 3000;

describe.each(serverEngines.flatMap((engine) => FORMS.map((form) => ({ engine, form }))))("$engine.name × $form", ({ engine, form }) => {
  let base: AnyKysely;
  beforeAll(async () => {
    base = await engine.connect(engine.url());
  });
  afterAll(async () => {
    await base.destroy();
  });

  const ROWS = ROWS_OF[form] ?? 1000;
  // Time to drain after the faults, and the test's own timeout: both grow with the backlog.
  const DRAIN_MS = 45_000 + ROWS * 20;
  test(`every session killed every 100–200 ms for ${FAULT_MS} ms during a drain of ${ROWS} rows`, { timeout: DRAIN_MS + 60_000 }, async () => {
    const scope = unique("sqlinbox_fault").toLowerCase();
    const url = await scopedUrl(engine, base, scope);
    // On MariaDB the app's sessions are found by their database: the setup session there is one
    // connection, left out of the kills by its own id.
    const setup = engine.engine === "postgres" ? base : (await parseDatabaseUrl(url).open({ max: 1 })).db;
    const table = unique(`fault_${form}`).toLowerCase();
    try {
      await createJobsTable(engine, setup, table);
      await insertJobs(setup, table, ROWS);
      const c = consumer(url, table, form, { workers: 4, batch: 16, leaseMs: 2000, shutdownGrace: GRACE_MS });
      const app = await c.app.start();
      const drainStarted = Date.now();
      await until(() => c.seen.length >= ROWS / 10, DRAIN_MS, "the drain to be under way");
      const underWayMs = Date.now() - drainStarted;

      let kills = 0;
      const faultEnd = Date.now() + FAULT_MS;
      while (Date.now() < faultEnd) {
        kills += await killAppSessions(engine.engine, setup, scope);
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
      }
      const faultsOver = Date.now();
      await until(async () => (await remaining(setup, table)) === 0, DRAIN_MS, `every row of ${table} handled after the faults`);
      const afterMs = Date.now() - faultsOver;
      const stopStarted = Date.now();
      await app.stop();
      const stopMs = Date.now() - stopStarted;

      const distinct = new Set(c.seen.map((s) => s.id));
      expect(distinct.size).toBe(ROWS);
      expect(stopMs).toBeLessThan(GRACE_MS + 2000);
      console.log(
        `outage ${engine.name} × ${form}: ${kills} sessions killed over ${FAULT_MS} ms; ${ROWS} rows, ${c.seen.length - ROWS} duplicates; stop() ${stopMs} ms (first ${ROWS / 10} rows in ${underWayMs} ms, the rest ${afterMs} ms after the faults)`,
      );
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(setup).catch(() => {});
      if (setup !== base) await setup.destroy();
      await dropScope(engine, base, scope).catch(() => {});
    }
  });
});

/** Kills the app's sessions only: Postgres by `application_name`, MariaDB by database (never this session). */
async function killAppSessions(engine: string, setup: AnyKysely, scope: string): Promise<number> {
  if (engine === "postgres") {
    const { rows } = await sql<{ pid: number }>`SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE application_name = ${scope}`.execute(setup);
    return rows.length;
  }
  const { rows } = await sql<{ id: number }>`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ${scope} AND ID <> CONNECTION_ID()`.execute(setup);
  for (const { id } of rows)
    await sql
      .raw(`KILL CONNECTION ${Number(id)}`)
      .execute(setup)
      .catch(() => {}); // gone already
  return rows.length;
}

async function remaining(setup: AnyKysely, table: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(setup);
  return Number(rows[0]?.n ?? 0);
}
