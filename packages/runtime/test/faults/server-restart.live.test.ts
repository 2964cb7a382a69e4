/**
 * A real PostgreSQL server restart (`scripts/services.sh restart-postgres`) during a drain on
 * every form: every row is handled once the server is back, nothing stays stuck; then `stop()`
 * during a second restart, while the server is down, returns within its grace.
 *
 * A restart ends every session on the server, so this file runs in the `faults` project, after
 * every other project, alone.
 */
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { sql } from "kysely";
import { expect, test } from "vitest";
import { unique } from "../support/engines.js";
import { consumer, createJobsTable, FORMS, insertJobs, scopedUrl, serverEngines, until } from "../support/claim-forms.js";

/** Rows per drain: the advisory form at the size of the backlogs issue 9 measured (8,000 rows). */
const ROWS_OF: Record<string, number> = { rowLock: 1000, lease: 1000, advisory: 8000 };
/** Time for each table to drain once the server is back: grows with its backlog. */
const drainMs = (rows: number) => 45_000 + rows * 20;
const GRACE_MS = 3000;
const postgres = serverEngines.find((e) => e.engine === "postgres");
const services = join(dirname(fileURLToPath(import.meta.url)), "../../../../scripts/services.sh");
const restartPostgres = () => promisify(execFile)("bash", [services, "restart-postgres"]);

test("PostgreSQL restarted during a drain on every form: every row handled; stop() during a restart returns within its grace", { timeout: 300_000 }, async () => {
  if (postgres === undefined) throw new Error("no Postgres engine");
  let base = await postgres.connect(postgres.url());
  const queues = await Promise.all(
    FORMS.map(async (form) => {
      const scope = unique("sqlinbox_restart").toLowerCase();
      const table = unique(`restart_${form}`).toLowerCase();
      await createJobsTable(postgres, base, table);
      const rows = ROWS_OF[form] ?? 1000;
      await insertJobs(base, table, rows);
      const c = consumer(await scopedUrl(postgres, base, scope), table, form, { workers: 4, batch: 16, shutdownGrace: GRACE_MS });
      return { form, table, rows, c, app: await c.app.start() };
    }),
  );
  try {
    await until(() => queues.every((q) => q.c.seen.length >= Math.min(q.rows / 10, 100)), 20_000, "every drain under way");
    await base.destroy();
    await restartPostgres();
    base = await postgres.connect(postgres.url());
    const setup = base;
    const remaining = async (table: string) => Number((await sql<{ n: string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(setup)).rows[0]?.n);
    const restarted = Date.now();
    for (const q of queues) await until(async () => (await remaining(q.table)) === 0, drainMs(q.rows), `every row of ${q.table} handled after the restart`);
    const drainedMs = Date.now() - restarted;
    for (const q of queues) {
      expect(new Set(q.c.seen.map((s) => s.id)).size).toBe(q.rows);
      console.log(`restart postgres × ${q.form}: ${q.rows} rows, ${q.c.seen.length - q.rows} duplicates`);
    }
    console.log(`every table drained ${drainedMs} ms after the server was back`);

    // A stop while the server is down or starting: no step may wait on it past the grace.
    await base.destroy();
    const restarting = restartPostgres();
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const reports = await Promise.all(queues.map((q) => q.app.stop()));
    const stopMs = Date.now() - started;
    await restarting;
    base = await postgres.connect(postgres.url());
    expect(stopMs).toBeLessThan(GRACE_MS + 2000);
    console.log(`stop() during a restart: ${stopMs} ms; ${JSON.stringify(reports)}`);
  } finally {
    for (const q of queues) await q.app.stop().catch(() => {});
    for (const q of queues) await sql`DROP TABLE IF EXISTS ${sql.id(q.table)}`.execute(base).catch(() => {});
    await base.destroy();
  }
});
