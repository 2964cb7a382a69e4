/**
 * Startup and wiring: nothing connects before start, hooks run before the schema check,
 * routes must be declared, secrets never reach the logs, fromKysely and publishes in the caller's transaction.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sql } from "kysely";
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { App, HandlerOutcome, InboxQueue, SqlBroker, SqlInboxError, subscriber } from "../src/index.js";
import { redactUrl } from "@sqlinbox/database";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { MemoryLogger, TestApp } from "../src/testing/index.js";
import type { AnyKysely } from "../src/drivers/database.js";
import { engineNamed, readRows, selects, unique } from "./support/engines.js";
import { jobsApp, jobsSpec, type Job } from "./support/fixtures.js";

const sqlite = engineNamed("sqlite");
const postgres = engineNamed("postgres");

describe("startup", () => {
  test("nothing connects before start; a failed connection is an error at start, its URL's password never logged", async () => {
    const url = "postgres://app:s3cret-pw@127.0.0.1:1/nowhere";
    const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } }); // no connection, no driver yet
    expect(broker.engine).toBe("postgres");
    const logger = new MemoryLogger();
    const spec = jobsSpec("jobs_nowhere");
    const app = new App({ name: "t", version: "0", logger }).withBroker(broker.route(spec, "jobs"), (b) =>
      b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => HandlerOutcome.ack())),
    );
    await expect(app.start()).rejects.toThrow();
    expect(JSON.stringify(logger.records)).not.toContain("s3cret-pw");
    expect(redactUrl(url)).toBe("postgres://app:***@127.0.0.1:1/nowhere");
  });

  test("a failed connection shows no secret of its URL: not a ?password=, not the sslkey file the driver could not read", async () => {
    const url = "postgres://app@127.0.0.1:1/nowhere?password=s3cret-pw&sslkey=s3cret-key.pem";
    const logger = new MemoryLogger();
    const spec = jobsSpec("jobs_nowhere");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } });
    const app = new App({ name: "t", version: "0", logger }).withBroker(broker.route(spec, "jobs"), (b) =>
      b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => HandlerOutcome.ack())),
    );
    const failure = (await app.start().catch((e: unknown) => e)) as SqlInboxError;
    expect(failure.code).toBe("Connect");
    // pg reads the key file before it connects, and its message names the file.
    expect(failure.message).toContain("cannot connect to postgres://app@127.0.0.1:1/nowhere?password=***&sslkey=***");
    expect(failure.message).toContain("'***'");
    expect(failure.message + JSON.stringify(logger.records)).not.toContain("s3cret");
  });

  test("URL schemes: postgres, postgresql, mysql, mariadb, sqlite; anything else is refused", () => {
    expect(parseDatabaseUrl("postgresql://x@h/db").engine).toBe("postgres");
    expect(parseDatabaseUrl("mariadb://x@h/db").engine).toBe("mysql");
    expect(parseDatabaseUrl("mysql://x@h/db").engine).toBe("mysql");
    expect(parseDatabaseUrl("sqlite::memory:").engine).toBe("sqlite");
    expect(() => parseDatabaseUrl("redis://h")).toThrow(/unsupported database URL scheme "redis"/);
  });

  test("a subscriber on a route nobody declared fails with NoRoute naming it; so does a publish", async () => {
    const url = sqlite.url();
    const db = await sqlite.connect(url);
    const table = unique("rt_noroute");
    await sqlite.createLeaseTable(db, table);
    await db.destroy();
    const spec = jobsSpec(table);
    const broker = SqlBroker.fromUrl(url);
    const app = new App({ name: "t", version: "0", logger: new MemoryLogger() }).withBroker(broker.route(spec, "jobs"), (b) =>
      b.include(subscriber(InboxQueue.of(spec, "invoices"), async () => HandlerOutcome.ack())),
    );
    const failure = await app.start().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(SqlInboxError);
    expect((failure as SqlInboxError).code).toBe("NoRoute");
    expect((failure as SqlInboxError).message).toContain('no route named "invoices" (declared: "jobs")');

    const ok = jobsApp(url, table, async () => HandlerOutcome.ack());
    const t = await TestApp.start(ok.app);
    await expect(ok.broker.publish("invoices" as string, { n: 1 })).rejects.toMatchObject({ code: "NoRoute", message: expect.stringContaining('"invoices"') });
    await t.stop();
  });

  test("the onStartup hook runs before the schema check (it can create the table); a missing table or column is a Schema error", async () => {
    const url = sqlite.url();
    const table = unique("rt_hook");
    const created: string[] = [];
    const { app, sub } = jobsApp(url, table, async () => HandlerOutcome.ack());
    const withHook = app.onStartup(async () => {
      const db = await sqlite.connect(url);
      await sqlite.createLeaseTable(db, table);
      await db.destroy();
      created.push(table);
    });
    const t = await TestApp.start(withHook);
    expect(created).toEqual([table]);
    await t.publish("jobs", { n: 1 });
    t.assertCalledOnce(sub, { n: 1 });
    await t.stop();

    const missing = jobsApp(url, unique("rt_missing"), async () => HandlerOutcome.ack());
    await expect(missing.app.start()).rejects.toMatchObject({ code: "Schema" });

    const noPayload = InboxSpec.table(table, column("id").generated()).attempt(column("attempt")).lease(column("locked_until")).payload(column("body"), payloadOf<Job>());
    const broker = SqlBroker.fromUrl(url);
    const bad = new App({ name: "t", version: "0", logger: new MemoryLogger() }).withBroker(broker.route(noPayload, "jobs"), (b) =>
      b.include(subscriber(InboxQueue.of(noPayload, "jobs"), async () => undefined)),
    );
    await expect(bad.start()).rejects.toMatchObject({ code: "Schema", message: expect.stringContaining('"body"') });
  });

  test("payloads are JSON: UTF-8 bytes in a binary column, text in a text column", async () => {
    const url = sqlite.url();
    const db = await sqlite.connect(url);
    const table = unique("rt_text");
    await sql`CREATE TABLE ${sql.id(table)} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload TEXT NOT NULL)`.execute(db);
    const { app, sub } = jobsApp(url, table, async () => HandlerOutcome.retryAfter(60_000));
    const t = await TestApp.start(app);
    await t.publish("jobs", { n: 7, title: "héllo" });
    t.assertCalledOnce(sub, { n: 7, title: "héllo" });
    const { rows } = await sql<{ payload: unknown }>`SELECT payload FROM ${sql.id(table)}`.execute(db);
    expect(rows[0]?.payload).toBe('{"n":7,"title":"héllo"}');
    await t.stop();
    await db.destroy();
  });

  test("a row-lock table is refused by this runtime with UnsupportedForm", async () => {
    const spec = InboxSpec.table("rt_rowlock", column("id")).payload(column("payload"));
    const broker = SqlBroker.fromUrl(sqlite.url());
    const app = new App({ name: "t", version: "0", logger: new MemoryLogger() }).withBroker(broker.route(spec, "jobs"), (b) =>
      b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)),
    );
    await expect(app.start()).rejects.toMatchObject({ code: "UnsupportedForm" });
  });
});

describe("builders", () => {
  test("leases are whole seconds, rounded up, 30 s by default; queues and brokers are immutable", () => {
    const broker = SqlBroker.fromUrl("sqlite::memory:");
    expect(broker.leaseMs).toBe(30_000);
    expect(broker.lease(1500).leaseMs).toBe(2000);
    expect(broker.leaseMs).toBe(30_000);
    const queue = InboxQueue.of(jobsSpec("t"), "jobs");
    expect(queue.options).toEqual({ pollInterval: 1000, workers: 1, batch: 1 });
    expect(queue.lease(59_001).options.lease).toBe(60_000);
    expect(queue.workers(3).options.workers).toBe(3);
    expect(queue.options.workers).toBe(1);
    expect(Object.isFrozen(queue)).toBe(true);
  });
});

describe.runIf(selects("postgres"))("SqlBroker.fromKysely on PostgreSQL", () => {
  let db: AnyKysely;
  const table = unique("rt_kysely");
  beforeAll(async () => {
    db = await postgres.connect(postgres.url());
    await postgres.createLeaseTable(db, table);
  });
  afterAll(async () => {
    await postgres.dropTable(db, table);
    await db.destroy();
  });

  test("publishes inside the caller's transaction commit with it and roll back with it; the app never destroys the caller's Kysely", async () => {
    const spec = jobsSpec(table);
    const broker = SqlBroker.fromKysely(db).route(spec, "jobs");
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(2000), async () => HandlerOutcome.ack());
    const app = new App({ name: "t", version: "0" }).withBroker(broker, (b) => b.include(sub));
    const t = await TestApp.start(app);

    await db
      .transaction()
      .execute(async (trx) => {
        await broker.publish("jobs", { n: 1 }, { via: trx });
        await sql`select 1`.execute(trx);
        throw new Error("rolled back");
      })
      .catch(() => {});
    await db.transaction().execute(async (trx) => {
      await broker.publish("jobs", { n: 2 }, { via: trx });
    });
    await t.advance(1000);
    expect(t.calls(sub).map((c) => c.payload)).toEqual([{ n: 2 }]);
    await t.stop();
    expect(await readRows(postgres, db, table)).toEqual([]); // still usable: not destroyed
  });
});
