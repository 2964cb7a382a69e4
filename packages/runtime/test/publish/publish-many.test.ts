/**
 * `broker.publishMany` on every engine: one multi-row insert per chunk returning the new ids in
 * order, inside the caller's transaction when given (a rollback leaves nothing), more rows than one
 * insert can carry split into chunks that commit together, and one wake delivering them all.
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { until } from "../support/claim-forms.js";
import { engines, readRows, unique } from "../support/engines.js";
import { jobsSpec, type Job } from "../support/fixtures.js";
import { sleep } from "../support/sleep.js";

describe.each(engines)("publishMany on $name", (engine) => {
  test("returns the new ids in order; the rows hold the payloads; one wake delivers them all", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pm");
    try {
      await engine.createLeaseTable(db, table);
      const spec = jobsSpec(table);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs");
      const received: number[] = [];
      // A 60 s poll: only the publish's wake can start the claims in time.
      const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(60_000).batch(50).workers(4), async (job) => void received.push(job.n));
      const app = await new App({ name: "pm", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      let ids: unknown[];
      let rows: Awaited<ReturnType<typeof readRows>>;
      try {
        await sleep(200); // the first claim came back empty: the subscription now waits for a wake
        const payloads: Job[] = Array.from({ length: 300 }, (_, n) => ({ n }));
        const published = await broker.publishMany("jobs", payloads);
        expect(published.every((p) => p.created)).toBe(true);
        ids = published.map((p) => p.id);
        rows = await readRows(engine, db, table);
        await until(() => received.length === 300, 15_000, "every published row delivered after one wake");
      } finally {
        await app.stop();
      }
      expect(ids).toHaveLength(300);
      expect(new Set(ids.map(Number)).size).toBe(300);
      // Rows read right after the publish (some may already be delivered): every id there came back from publishMany with its payload.
      const byId = new Map(ids.map((id, n) => [Number(id), n]));
      for (const row of rows) expect(JSON.parse(row.payload)).toEqual({ n: byId.get(row.id) });
      expect([...received].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, n) => n));
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });

  // Not on SQLite: better-sqlite3 reads integers as JavaScript numbers, so ids there stay below 2^53 (docs/publishing.md says so).
  test.skipIf(engine.name === "sqlite")("ids across 2^53 come back exact, as text", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pm_big");
    try {
      await engine.createLeaseTable(db, table);
      // The next id is 2^53 - 1: the three rows' ids cross the largest safe integer.
      if (engine.name === "postgres") await sql`SELECT setval(pg_get_serial_sequence(${table}, 'id'), 9007199254740990)`.execute(db);
      else await sql`ALTER TABLE ${sql.id(table)} AUTO_INCREMENT = 9007199254740991`.execute(db);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(jobsSpec(table), "jobs");
      try {
        const published = await broker.publishMany("jobs", [{ n: 1 }, { n: 2 }, { n: 3 }]);
        expect(published.map((p) => p.id)).toEqual(["9007199254740991", "9007199254740992", "9007199254740993"]);
      } finally {
        await broker.close();
      }
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });

  test("inside the caller's transaction: a rollback leaves nothing, a commit publishes every row", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pm_tx");
    try {
      await engine.createLeaseTable(db, table);
      const spec = jobsSpec(table);
      const broker = SqlBroker.fromKysely(db).route(spec, "jobs");
      const app = await new App({ name: "pm", version: "0", logger: silentLogger }).withBroker(broker, (b) => b).start();
      try {
        const rolledBack = await db
          .transaction()
          .execute(async (trx) => {
            await broker.publishMany("jobs", [{ n: 1 }, { n: 2 }], { via: trx });
            throw new Error("roll back");
          })
          .catch((e: unknown) => e);
        expect((rolledBack as Error).message).toBe("roll back");
        expect(await readRows(engine, db, table)).toEqual([]);
        const ids = await db.transaction().execute((trx) => broker.publishMany("jobs", [{ n: 3 }, { n: 4 }, { n: 5 }], { via: trx }));
        const rows = await readRows(engine, db, table);
        expect(rows.map((r) => r.id)).toEqual(ids.map((p) => Number(p.id)));
        expect(rows.map((r) => JSON.parse(r.payload).n)).toEqual([3, 4, 5]);
        expect(await broker.publishMany("jobs", [])).toEqual([]);
      } finally {
        await app.stop();
      }
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });

  test("more rows than one insert can carry: split into chunks that commit together", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("pm_big");
    const count = engine.engine === "sqlite" ? 33_000 : 66_000;
    try {
      await engine.createLeaseTable(db, table);
      const spec = jobsSpec(table);
      const broker = SqlBroker.fromUrl(url).route(spec, "jobs");
      const app = await new App({ name: "pm", version: "0", logger: silentLogger }).withBroker(broker, (b) => b).start();
      try {
        const ids = await broker.publishMany(
          "jobs",
          Array.from({ length: count }, (_, n) => ({ n })),
        );
        expect(ids).toHaveLength(count);
        expect(new Set(ids.map((p) => Number(p.id))).size).toBe(count);
      } finally {
        await app.stop();
      }
      const counted = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db);
      expect(Number(counted.rows[0]?.n)).toBe(count);
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 60_000);
});
