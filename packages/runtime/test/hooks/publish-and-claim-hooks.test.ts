/**
 * The hooks OpenTelemetry needs beside `app.use` and the job events, public for any user, on every
 * engine × form against real servers: publish middleware (`app.usePublish`) in registration order,
 * its headers written into every row of the call and read back as `keys.headers`, `next()`
 * resolving to the rows written, a throw failing the publish with nothing written; the `claimed`
 * event, once per claim statement, idle polls included; `settlementFailed`, when a settlement
 * cannot be written (its row then returns and runs again); and `undecodable`, for a row whose
 * payload no handler could be given.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, silentLogger, subscriber, type OutgoingPublish } from "../../src/index.js";
import { TestApp } from "../../src/testing/index.js";
import { createJobsTable, jobsSpecOf, matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";

/** A jobs table with a headers column: JSONB on Postgres, JSON on MariaDB, TEXT on SQLite. */
async function createHeadersTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, headers TEXT, payload TEXT NOT NULL)`.execute(db);
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, headers JSONB, payload TEXT NOT NULL)`.execute(db);
  } else {
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, headers JSON NULL, payload TEXT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

function headersSpecOf(table: string, form: ClaimForm) {
  const columns = { id: field.id().generated(), attempt: field.attempt().generated(), headers: field.headers(), payload: field.payload<{ n: number }>() };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, locked_until: field.lease() } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{id}" });
  return defineInbox({ table, columns });
}

async function rowsOf(db: AnyKysely, table: string): Promise<number> {
  return (await db.selectFrom(table).select("id").execute()).length;
}

describe.each(matrix)("publish and claim hooks on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("publish middleware: first registered outermost; its headers reach every row; next() gives the rows; a throw writes nothing", async () => {
    const traced = unique(`ph_${form}`);
    const plain = unique(`pp_${form}`);
    await createHeadersTable(engine, db, traced);
    await createJobsTable(engine, db, plain);
    // Typed loosely: the spec's type differs per form and the matrix runs one body for all of them.
    const tracedSpec = headersSpecOf(traced, form) as never;
    const plainSpec = jobsSpecOf(plain, form);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } })
      .route(tracedSpec, "traced")
      .route(plainSpec, "plain");
    const order: string[] = [];
    const seenPublishes: OutgoingPublish[] = [];
    const written: unknown[][] = [];
    let refuse = false;
    const delivered: Array<{ n: number; headers: Readonly<Record<string, string>> }> = [];
    const app = new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b.include(
          subscriber(InboxQueue.of(tracedSpec, "traced").pollInterval(50), async (job: unknown, ctx) => {
            delivered.push({ n: (job as { n: number }).n, headers: (ctx as { get(k: typeof keys.headers): Readonly<Record<string, string>> }).get(keys.headers) });
          }),
        ),
      )
      .usePublish(async (publish, next) => {
        order.push("outer in");
        seenPublishes.push({ ...publish, headers: publish.headers === undefined ? undefined : { ...publish.headers } });
        if (publish.headers !== undefined) publish.headers["region"] = "eu";
        const rows = await next();
        written.push(rows.map((r) => r.id));
        order.push("outer out");
        return rows;
      })
      .usePublish(async (publish, next) => {
        order.push("inner in");
        if (refuse) throw new Error("publish refused by a middleware");
        if (publish.headers !== undefined) publish.headers["tenant"] = "acme";
        const rows = await next();
        order.push("inner out");
        return rows;
      });
    const running = await app.start();
    try {
      const one = await broker.publish("traced", { n: 1 } as never, { headers: { origin: "test" } } as never);
      expect(order).toEqual(["outer in", "inner in", "inner out", "outer out"]);
      const many = await broker.publishMany("traced", [{ n: 2 }, { n: 3 }] as never);
      await broker.publish("plain", { n: 4 }, { columns: { k: "k4" } });
      expect(seenPublishes).toEqual([
        { route: "traced", table: traced, rows: 1, headers: { origin: "test" } },
        { route: "traced", table: traced, rows: 2, headers: {} },
        { route: "plain", table: plain, rows: 1, headers: undefined },
      ]);
      // What next() resolved to: the rows the publish answers, in order.
      expect(written[0]?.map(String)).toEqual([one.id]);
      expect(written[1]?.map(String)).toEqual(many.map((p) => p.id));

      refuse = true;
      const failed = await broker.publish("traced", { n: 5 } as never).catch((error: unknown) => error);
      expect((failed as Error).message).toBe("publish refused by a middleware");
      refuse = false;

      await until(() => delivered.length === 3, 10_000, "three deliveries");
      expect(await rowsOf(db, plain)).toBe(1);
      await until(async () => (await rowsOf(db, traced)) === 0, 10_000, "the traced rows to be acked");
      expect([...delivered].sort((a, b) => a.n - b.n)).toEqual([
        { n: 1, headers: { origin: "test", region: "eu", tenant: "acme" } },
        { n: 2, headers: { region: "eu", tenant: "acme" } },
        { n: 3, headers: { region: "eu", tenant: "acme" } },
      ]);
    } finally {
      await running.stop();
      await broker.close();
      await engine.dropTable(db, traced);
      await engine.dropTable(db, plain);
    }
  });

  test("claimed fires once per claim statement with the rows it brought, idle polls included", async () => {
    const table = unique(`cl_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs");
    const claims: Array<{ route: string; rows: number; durationMs: number }> = [];
    let handled = 0;
    const app = new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b.include(
          subscriber(InboxQueue.of(spec, "jobs").workers(2).pollInterval(50), async () => {
            handled++;
          }),
        ),
      )
      .on("claimed", (e) => void claims.push(e));
    const running = await app.start();
    try {
      for (let n = 0; n < 5; n++) await broker.publish("jobs", { n }, { columns: { k: `k${n}` } });
      await until(() => handled === 5, 10_000, "five deliveries");
      const polled = claims.length;
      await until(() => claims.length >= polled + 2, 5_000, "idle polls after the drain");
      expect(claims.every((c) => c.route === "jobs" && Number.isFinite(c.durationMs) && c.durationMs >= 0)).toBe(true);
      expect(claims.reduce((sum, c) => sum + c.rows, 0)).toBe(5);
      expect(claims.slice(polled).every((c) => c.rows === 0)).toBe(true);
    } finally {
      await running.stop();
      await broker.close();
      await engine.dropTable(db, table);
    }
  });

  test("settlementFailed: a settlement the database refused, with the outcome it was writing; the row runs again", async () => {
    const table = unique(`sf_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } })
      .lease(1000)
      .route(spec, "jobs");
    const events: string[] = [];
    const failures: Array<{ outcome: string; error: unknown }> = [];
    let heal = (): void => {};
    const app = new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(spec, "jobs").workers(1).pollInterval(50), async () => HandlerOutcome.ack())))
      .on("started", () => void events.push("started"))
      .on("succeeded", () => void events.push("succeeded"))
      .on("leaseLost", () => void events.push("leaseLost"))
      .on("settlementFailed", (e) => {
        events.push("settlementFailed");
        failures.push({ outcome: e.outcome, error: e.error });
        // One refusal: the row's next run settles.
        heal();
      });
    const t = await TestApp.startLive(app);
    try {
      heal = t.failStatements("settle");
      await broker.publish("jobs", { n: 1 }, { columns: { k: "k1" } });
      await t.waitFor(async () => (await rowsOf(db, table)) === 0, 10_000, "the row to run again and be acked");
      await t.waitFor(() => events.includes("succeeded"), 5_000, "the success");
      expect(events).toEqual(["started", "settlementFailed", "started", "succeeded"]);
      expect(failures).toHaveLength(1);
      expect(failures[0]?.outcome).toBe("ack");
      expect(String(failures[0]?.error)).toContain("database unreachable");
    } finally {
      await t.stop();
      await broker.close();
      await engine.dropTable(db, table);
    }
  });

  test("undecodable: a row whose payload cannot be decoded, with the decode error; no handler runs, the other rows flow", async () => {
    const table = unique(`ud_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs");
    const undecodable: Array<{ id: string; error: unknown; written: boolean }> = [];
    const handled: number[] = [];
    const app = new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b.include(
          subscriber(InboxQueue.of(spec, "jobs").workers(1).pollInterval(50), async (job) => {
            handled.push(job.n);
          }),
        ),
      )
      .on("undecodable", (e) => void undecodable.push({ id: String(e.id), error: e.error, written: e.written }));
    const running = await app.start();
    try {
      await db
        .insertInto(table)
        .values({ k: "bad", payload: Buffer.from("{not json") })
        .execute();
      const good = await broker.publish("jobs", { n: 1 }, { columns: { k: "k1" } });
      await until(() => handled.length === 1 && undecodable.length === 1, 10_000, "the good row handled and the bad one told");
      const [bad] = await db.selectFrom(table).select("id").where("k", "=", "bad").execute();
      expect(undecodable).toEqual([{ id: String((bad as { id: unknown }).id), error: expect.any(Error), written: true }]);
      expect(undecodable[0]?.id).not.toBe(good.id);
      expect(handled).toEqual([1]);
    } finally {
      await running.stop();
      await broker.close();
      await engine.dropTable(db, table);
    }
  });
});
