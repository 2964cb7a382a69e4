/**
 * The connection budget: an app whose pool cannot hold what its subscriptions declare
 * refuses to start with `PoolTooSmall` and the arithmetic; a run with workers(8) never holds
 * more server connections than its budget (sampled from pg_stat_activity / PROCESSLIST).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { isSqlInboxError, SqlBroker, subscriber, InboxQueue, App, silentLogger } from "../../src/index.js";
import { unique } from "../support/engines.js";
import { consumer, createJobsTable, dropScope, insertJobs, jobsSpecOf, scopedUrl, serverEngines, sessionsOf, until } from "../support/claim-forms.js";

describe.each(serverEngines)("connection budget on $name", (engine) => {
  let base: AnyKysely;
  const scopes: string[] = [];
  const opened: AnyKysely[] = [];
  beforeAll(async () => {
    base = await engine.connect(engine.url());
  });
  afterAll(async () => {
    for (const db of opened) await db.destroy().catch(() => {});
    for (const s of scopes) await dropScope(engine, base, s).catch(() => {});
    await base.destroy();
  });

  test("a pool smaller than the subscriptions need: PoolTooSmall with the arithmetic", async () => {
    const table = unique("pool_small");
    const rowLock = jobsSpecOf(table, "rowLock");
    const advisory = jobsSpecOf(`${table}_adv`, "advisory");
    const lease = jobsSpecOf(`${table}_lease`, "lease");
    await createJobsTable(engine, base, table);
    await createJobsTable(engine, base, `${table}_adv`);
    await createJobsTable(engine, base, `${table}_lease`);
    try {
      const broker = SqlBroker.fromUrl(engine.url(), { pool: { max: 10 } })
        .route(rowLock, "renders")
        .route(advisory, "per-customer")
        .route(lease, "reports");
      const app = new App({ name: "t", version: "0", logger: silentLogger }).withBroker(broker, (b) =>
        b
          .include(subscriber(InboxQueue.of(rowLock, "renders").workers(8), async () => undefined))
          .include(subscriber(InboxQueue.of(advisory, "per-customer").workers(4), async () => undefined))
          .include(subscriber(InboxQueue.of(lease, "reports").workers(16), async () => undefined)),
      );
      const error = await app.start().catch((e: unknown) => e);
      expect(isSqlInboxError(error, "PoolTooSmall")).toBe(true);
      const message = (error as Error).message;
      console.log(message);
      expect(message).toContain('"renders" (rowLock, workers(8)): 8 x 1 for deliveries in work + 1 for handlers, publishes and settlements = 9');
      expect(message).toContain('"per-customer" (advisory, workers(4)): 4 x 1 for deliveries in work + 1 for handlers, publishes and settlements = 5');
      expect(message).toContain('"reports" (lease, workers(16)): 16 x 0 for deliveries in work + 1 for handlers, publishes and settlements = 1');
      expect(message).toContain("total 15 > pool max 10");
    } finally {
      for (const t of [table, `${table}_adv`, `${table}_lease`]) await engine.dropTable(base, t);
    }
  });

  test("a second subscription to the same queue on one broker: AlreadySubscribed", async () => {
    const table = unique("pool_twice");
    const spec = jobsSpecOf(table, "rowLock");
    await createJobsTable(engine, base, table);
    try {
      const broker = SqlBroker.fromUrl(engine.url(), { pool: { max: 10 } }).route(spec, "jobs");
      const app = (): App =>
        new App({ name: "t", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)));
      const first = await app().start();
      try {
        await expect(app().start()).rejects.toMatchObject({ code: "AlreadySubscribed" });
      } finally {
        await first.stop();
      }
    } finally {
      await engine.dropTable(base, table);
    }
  });

  // The advisory form claims row by row at batch(1), one session per delivery, and in batches above it,
  // one session per batch: the batch case holds fewer connections, never more than the budget.
  test.each<{ form: ClaimForm; batch: number; least: number }>([
    { form: "rowLock", batch: 8, least: 8 },
    { form: "advisory", batch: 1, least: 8 },
    { form: "advisory", batch: 8, least: 1 },
  ])("$form batch($batch) with workers(8) never holds more connections than its budget (9)", async ({ form, batch, least }) => {
    const scope = unique(`sqlinbox_pool_${form}`).toLowerCase();
    scopes.push(scope);
    const url = await scopedUrl(engine, base, scope);
    const db = engine.engine === "postgres" ? base : await engine.connect(url);
    if (db !== base) opened.push(db);
    const table = unique(`pool_${form}`).toLowerCase();
    await createJobsTable(engine, db, table);
    await insertJobs(db, table, 200);
    // On MariaDB the scope is a database, where the test's own session would count too: close it and
    // read the drain through \`base\`, so the peak is the app's sessions alone.
    if (db !== base) {
      await db.destroy();
      opened.splice(opened.indexOf(db), 1);
    }
    const remaining = async () => Number((await sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM ${db === base ? sql.id(table) : sql.id(scope, table)}`.execute(base)).rows[0]?.n);
    const c = consumer(url, table, form, { workers: 8, batch, poolMax: 9, handle: () => new Promise((r) => setTimeout(r, 15)) });
    const app = await c.app.start();
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, (await sessionsOf(engine, base, scope)).length);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    try {
      await until(async () => (await remaining()) === 0, 30_000, "the table to drain");
    } finally {
      sampling = false;
      await sampler;
      await app.stop();
    }
    console.log(`${engine.name} × ${form} batch(${batch}): workers(8), pool max 9, peak ${peak} server connections`);
    expect(peak).toBeLessThanOrEqual(9);
    expect(peak).toBeGreaterThanOrEqual(least);
    expect(c.errors).toEqual([]);
  });
});
