/**
 * PgBouncer 1.18 in front of the local Postgres (`scripts/services.sh pgbouncer`):
 * - transaction mode (6432): the lease and row-lock forms drain, survive a worker killed with
 *   SIGKILL mid-handler, and move a failing row to a dead-letter table; the advisory form and
 *   `listenNotify()`, which keep a session across transactions, are refused at startup when the
 *   broker declares `pooler: "transaction"`, which also turns off named prepared statements (1.18 cannot
 *   carry them); asked for anyway, the first statement that misses its name fails and naming stops;
 * - session mode (6433): every form drains, and `listenNotify()` runs.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, keys, silentLogger, subscriber } from "../../src/index.js";
import { consumer, createJobsTable, FORMS, insertJobs, readJobs, startWorker, until } from "../support/claim-forms.js";
import { createTables, deadJobsOf, dropTables, groupedJobsOf, insertGrouped, readDead, readSource } from "../support/dead-letter-tables.js";
import { engines, unique } from "../support/engines.js";
import { PGBOUNCER_SESSION_URL, PGBOUNCER_TRANSACTION_URL, services } from "./services.js";

const postgres = engines.find((e) => e.engine === "postgres");
if (postgres === undefined) throw new Error("no Postgres engine");
const pg = postgres;
const ROWS = 500;
const LEASE_MS = 2000;
let base: AnyKysely;

beforeAll(async () => {
  await services("pgbouncer");
  base = await pg.connect(pg.url());
}, 120_000);
afterAll(async () => {
  await base.destroy();
});

async function drain(url: string, form: (typeof FORMS)[number], options: { pooler?: "session" | "transaction"; listenNotify?: boolean } = {}) {
  const table = unique(`pgb_${form}`).toLowerCase();
  await createJobsTable(pg, base, table);
  await insertJobs(base, table, ROWS);
  const c = consumer(url, table, form, { workers: 4, batch: 16, leaseMs: LEASE_MS, ...options });
  const started = Date.now();
  const app = await c.app.start();
  try {
    await until(async () => (await readJobs(base, table)).length === 0, 60_000, `every row of ${table} handled`);
    const ms = Date.now() - started;
    expect(new Set(c.seen.map((s) => s.id)).size).toBe(ROWS);
    expect(c.seen.length).toBe(ROWS);
    expect(c.errors).toEqual([]);
    return ms;
  } finally {
    await app.stop();
    await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(base);
  }
}

describe.each(["lease", "rowLock"] as const)("PgBouncer transaction mode × %s", (form) => {
  test(`a drain of ${ROWS} rows`, async () => {
    const ms = await drain(PGBOUNCER_TRANSACTION_URL, form, { pooler: "transaction" });
    console.log(`pgbouncer transaction × ${form}: ${ROWS} rows drained in ${ms} ms, each once, no error`);
  });

  test("named prepared statements asked for anyway (`preparedStatements: true`; 1.18 cannot carry them): a statement that finds its name missing fails, naming stops, and the drain ends with each row once", async () => {
    const table = unique(`pgb_named_${form}`).toLowerCase();
    await createJobsTable(pg, base, table);
    await insertJobs(base, table, ROWS);
    const c = consumer(PGBOUNCER_TRANSACTION_URL, table, form, { workers: 4, batch: 16, leaseMs: LEASE_MS, pooler: "transaction", preparedStatements: true });
    // Two other clients of PgBouncer take and give back server sessions all through the drain: PgBouncer hands out
    // the session given back last, so on a slow machine the drain's statements could all run on one session, where
    // their names exist. With these beside them they land on others.
    const churn = await pg.connect(PGBOUNCER_TRANSACTION_URL);
    let draining = true;
    const churning = Promise.all(
      [0, 1].map(async () => {
        while (draining) await sql`SELECT pg_sleep(0.002)`.execute(churn);
      }),
    );
    const app = await c.app.start();
    try {
      await until(async () => (await readJobs(base, table)).length === 0, 60_000, `every row of ${table} handled`);
      draining = false;
      await churning;
      expect(new Set(c.seen.map((s) => s.id)).size).toBe(ROWS);
      // What failed failed on a name the server session did not have (26000) or had already (42P05), nothing else.
      expect(c.errors.filter((e) => e.code !== "26000" && e.code !== "42P05")).toEqual([]);
      // At least one did (four workers on PgBouncer's sessions), and naming stopped after: at most one per pooled session.
      expect(c.errors.length).toBeGreaterThanOrEqual(1);
      expect(c.errors.length).toBeLessThanOrEqual(5);
      console.log(`pgbouncer transaction × ${form}, preparedStatements: true: ${ROWS} rows, ${c.seen.length} deliveries, ${c.errors.length} failures on a statement's name`);
    } finally {
      draining = false;
      await churning.catch(() => {});
      await churn.destroy();
      await app.stop();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(base);
    }
  });

  test("a worker killed with SIGKILL mid-handler: its row comes back, nothing lost", async () => {
    const table = unique(`pgb_kill_${form}`).toLowerCase();
    await createJobsTable(pg, base, table);
    await insertJobs(base, table, 3);
    const ids = (await readJobs(base, table)).map((r) => r.id);
    try {
      const worker = startWorker({ url: PGBOUNCER_TRANSACTION_URL, table, form, workers: 1, holdMs: 60_000, leaseMs: LEASE_MS });
      const first = await worker.waitFor((l) => l.event === "start", 20_000, "first delivery");
      worker.child.kill("SIGKILL");
      const killedAt = Date.now();
      await worker.exited;
      const b = consumer(PGBOUNCER_TRANSACTION_URL, table, form, { workers: 2, leaseMs: LEASE_MS, pooler: "transaction" });
      const app = await b.app.start();
      await until(async () => (await readJobs(base, table)).length === 0, 20_000, "every row settled by the second app");
      await app.stop();
      expect(b.seen.map((s) => s.id).sort((x, y) => x - y)).toEqual(ids);
      const again = b.seen.find((s) => s.id === first.id);
      const back = (again?.at ?? 0) - killedAt;
      if (form === "lease") {
        expect(again?.attempt).toBe(2);
        expect((again?.at ?? 0) - first.time).toBeGreaterThanOrEqual(LEASE_MS - 500);
      } else {
        // PgBouncer closes the server session of a client that left mid-transaction: the row is back at once.
        expect(again?.attempt).toBe(1);
        expect(back).toBeLessThan(1500);
      }
      expect(b.errors).toEqual([]);
      console.log(`pgbouncer transaction × ${form}: SIGKILL mid-handler, row back ${back} ms after the kill, attempt ${again?.attempt}`);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(base);
    }
  });

  test("a throw at maxAttempts moves the row to the dead-letter table", async () => {
    const jobs = unique(`pgb_dl_${form}`);
    const dead = unique(`pgb_dead_${form}`);
    await createTables(pg, base, jobs, dead);
    const spec = groupedJobsOf(jobs, form);
    const attempts: Array<number | undefined> = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50).deadLetter(deadJobsOf(dead), { maxAttempts: 2 }), async (_job, ctx) => {
      attempts.push(ctx.get(keys.attempt));
      throw new Error("boom");
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(
        SqlBroker.fromUrl(PGBOUNCER_TRANSACTION_URL, { pool: { max: 3 }, pooler: "transaction" })
          .lease(LEASE_MS)
          .route(spec, "jobs"),
        (b) => b.include(sub),
      )
      .start();
    try {
      await insertGrouped(base, jobs, 1);
      await until(async () => (await readDead(base, dead)).length === 1, 15_000, "the dead letter");
      expect(attempts).toEqual([1, 2]);
      expect(await readSource(base, jobs)).toEqual([]);
      expect(await readDead(base, dead)).toEqual([{ payload: '{"n":0}', lastError: "Error: boom", failedAttempts: 2 }]);
    } finally {
      await app.stop();
      await dropTables(base, jobs, dead);
    }
  });
});

describe("PgBouncer transaction mode, declared: what keeps a session is refused at startup", () => {
  test("an advisory table: UnsupportedForm naming the pooler mode", async () => {
    const table = unique("pgb_adv").toLowerCase();
    const c = consumer(PGBOUNCER_TRANSACTION_URL, table, "advisory", { pooler: "transaction" });
    await expect(c.app.start()).rejects.toMatchObject({ code: "UnsupportedForm", message: expect.stringMatching(/advisory form .*pooler in transaction mode/) });
  });

  test("listenNotify(): UnsupportedForm naming the pooler mode", async () => {
    const table = unique("pgb_listen").toLowerCase();
    await createJobsTable(pg, base, table);
    try {
      const c = consumer(PGBOUNCER_TRANSACTION_URL, table, "lease", { pooler: "transaction", listenNotify: true });
      await expect(c.app.start()).rejects.toMatchObject({ code: "UnsupportedForm", message: expect.stringMatching(/listenNotify\(\).*pooler in transaction mode/) });
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(base);
    }
  });
});

describe.each(FORMS)("PgBouncer session mode × %s", (form) => {
  test(`a drain of ${ROWS} rows, listenNotify() on`, async () => {
    const ms = await drain(PGBOUNCER_SESSION_URL, form, { pooler: "session", listenNotify: true });
    console.log(`pgbouncer session × ${form}: ${ROWS} rows drained in ${ms} ms with listenNotify(), each once, no error`);
  });
});
