/**
 * A producer needs no App: a broker connects on its first publish (one pool, one schema check,
 * however many publishes start at once) and `close()` ends its pool, so a process that only
 * publishes exits by itself. On a broker an app runs, `close()` does nothing: the app's stop ends the pool.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { until } from "../support/claim-forms.js";
import { engines, readRows, unique } from "../support/engines.js";
import { createInboxTable } from "../../src/index.js";
import { jobsSpec, keyedSpec } from "../support/fixtures.js";
import { fixtureBundle } from "../support/fixture-bundles.js";

const runtimeRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** Runs the producer fixture; resolves with its exit code, output and how long it lived. */
function runProducer(url: string, table: string, count: number): Promise<FixtureRun> {
  return runFixture("test/support/fixtures/producer.ts", { PRODUCER_URL: url, PRODUCER_TABLE: table, PRODUCER_COUNT: String(count) });
}

interface FixtureRun {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function runFixture(file: string, env: Record<string, string>): Promise<FixtureRun> {
  const started = Date.now();
  const child = spawn(process.execPath, [fixtureBundle(file)], {
    cwd: runtimeRoot,
    env: { ...process.env, ...env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  // A process that an open handle keeps alive never exits by itself: killed here, it fails the test.
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    }),
  );
}

/** Runs the keyed producer fixture (see support/fixtures/keyed-producer.ts). */
function runKeyed(url: string, table: string, count: number, order: "forward" | "reverse") {
  return runFixture("test/support/fixtures/keyed-producer.ts", { KEYED_URL: url, KEYED_TABLE: table, KEYED_COUNT: String(count), KEYED_ORDER: order });
}

describe.each(engines)("a producer with no App on $name", (engine) => {
  test("publishes at once, closes, and its process exits by itself with code 0; the rows are there", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("producer");
    try {
      await engine.createLeaseTable(db, table);
      const run = await runProducer(url, table, 25);
      expect(run.stderr).toBe("");
      expect(run.signal).toBeNull();
      expect(run.code).toBe(0);
      const out = JSON.parse(run.stdout.trim()) as { first: Array<{ id: unknown; created: boolean }> | unknown[]; rest: number; closed: boolean };
      expect(out.closed).toBe(true);
      expect(out.rest).toBe(23);
      const rows = await readRows(engine, db, table);
      expect(rows.map((r) => JSON.parse(r.payload).n).sort((a: number, b: number) => a - b)).toEqual(Array.from({ length: 25 }, (_, n) => n));
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 90_000);

  test("close() on a broker an app runs does nothing (false): the app keeps claiming, its stop ends the pool; a closed broker refuses publishes", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("producer_app");
    try {
      await engine.createLeaseTable(db, table);
      const spec = jobsSpec(table);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs");
      // Published before any app: the broker connects for it.
      await broker.publish("jobs", { n: 0 });
      const received: number[] = [];
      const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(50), async (job) => void received.push(job.n));
      const app = await new App({ name: "producer-app", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        expect(await broker.close()).toBe(false);
        await broker.publish("jobs", { n: 1 });
        await until(() => received.length === 2, 15_000, "both rows delivered while the app runs");
      } finally {
        await app.stop();
      }
      expect(await broker.close()).toBe(true);
      await expect(broker.publish("jobs", { n: 2 })).rejects.toMatchObject({ code: "Closed" });
      expect([...received].sort()).toEqual([0, 1]);
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  }, 60_000);

  test("two processes publishing the same keys at once, in opposite orders: one row per key, the same id in both, no error", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("producer_keys");
    const COUNT = 60;
    try {
      await createInboxTable(db, keyedSpec(table));
      const [a, b] = await Promise.all([runKeyed(url, table, COUNT, "forward"), runKeyed(url, table, COUNT, "reverse")]);
      for (const run of [a, b]) {
        expect(run.stderr).toBe("");
        expect(run.code).toBe(0);
      }
      const outA = JSON.parse(a.stdout.trim()) as { ids: Record<string, string>; created: Record<string, number> };
      const outB = JSON.parse(b.stdout.trim()) as { ids: Record<string, string>; created: Record<string, number> };
      expect(outA.ids).toEqual(outB.ids);
      // Each key's row was created by exactly one of the two processes' publishes.
      for (let i = 0; i < COUNT; i++) expect((outA.created[`key-${i}`] ?? 0) + (outB.created[`key-${i}`] ?? 0)).toBe(1);
      const { rows } = await sql<{ job_key: string; id: unknown }>`SELECT job_key, id FROM ${sql.id(table)}`.execute(db);
      expect(rows).toHaveLength(COUNT);
      for (const row of rows) expect(String(row.id)).toBe(outA.ids[row.job_key]);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  }, 120_000);
});
