/**
 * Prefix routes and the headers role, live in every form on every engine: a publish to
 * "reports.daily" goes to the table routed "reports.*" (its group value is the published name),
 * an exact route beats the prefix, an unknown name is `NoRoute` naming the routes, and the headers
 * a publish carries reach the handler as `keys.headers`.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, isSqlInboxError, keys, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { engineNamed, unique, type TestEngine } from "../support/engines.js";

/** A group table with a headers column: JSONB on Postgres, JSON on MariaDB, TEXT on SQLite. */
async function createTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, grp TEXT NOT NULL, headers TEXT, payload TEXT NOT NULL)`.execute(
      db,
    );
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, grp TEXT NOT NULL, headers JSONB, payload TEXT NOT NULL)`.execute(
      db,
    );
  } else {
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, grp VARCHAR(64) NOT NULL, headers JSON NULL, payload TEXT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

function specOf(table: string, form: ClaimForm) {
  const columns = { id: field.id().generated(), attempt: field.attempt().generated(), grp: field.group(), headers: field.headers(), payload: field.payload<{ n: number }>() };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, locked_until: field.lease() } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{id}" });
  return defineInbox({ table, columns });
}

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

describe.each(matrix)("prefix routes and headers on $engine.name × $form", ({ engine, form }) => {
  test("reports.daily goes to the reports.* table with its group set, reports.weekly to its exact route; headers reach keys.headers", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const prefixed = unique(`rt_${form}`);
    const exact = unique(`rx_${form}`);
    try {
      await createTable(engine, db, prefixed);
      await createTable(engine, db, exact);
      // Typed loosely: the spec's type differs per form and the matrix runs one body for all of them.
      const prefixSpec = specOf(prefixed, form) as never;
      const exactSpec = specOf(exact, form) as never;
      const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
        .route(prefixSpec, "reports.*")
        .route(exactSpec, "reports.weekly");
      const seen: Array<{ route: string; n: number; headers: Readonly<Record<string, string>> }> = [];
      const consume = (route: string, spec: never) =>
        subscriber(InboxQueue.of(spec, route).pollInterval(50), async (job: unknown, ctx) => {
          seen.push({ route, n: (job as { n: number }).n, headers: (ctx as { get(k: typeof keys.headers): Readonly<Record<string, string>> }).get(keys.headers) });
        });
      const app = new App({ name: "routes", version: "0", logger: silentLogger }).withBroker(broker, (b) =>
        b.include(consume("reports.daily", prefixSpec)).include(consume("reports.weekly", exactSpec)),
      );
      const running = await app.start();
      try {
        await broker.publish("reports.daily", { n: 1 } as never, { headers: { traceparent } } as never);
        await broker.publish("reports.weekly", { n: 2 } as never);
        await broker.publishMany("reports.daily", [{ n: 3 }, { n: 4 }] as never, { headers: { tenant: "acme" } } as never);
        const refused = await broker.publish("mail.welcome" as string, { n: 5 } as never).catch((e: unknown) => e);
        expect(isSqlInboxError(refused, "NoRoute")).toBe(true);
        expect((refused as Error).message).toContain('no route named "mail.welcome" (declared: "reports.*", "reports.weekly")');
        await until(() => seen.length === 4, 10_000, "four deliveries");
      } finally {
        await running.stop();
      }
      const sorted = [...seen].sort((a, b) => a.n - b.n);
      expect(sorted).toEqual([
        { route: "reports.daily", n: 1, headers: { traceparent } },
        { route: "reports.weekly", n: 2, headers: {} },
        { route: "reports.daily", n: 3, headers: { tenant: "acme" } },
        { route: "reports.daily", n: 4, headers: { tenant: "acme" } },
      ]);
    } finally {
      await engine.dropTable(db, prefixed).catch(() => {});
      await engine.dropTable(db, exact).catch(() => {});
      await db.destroy();
    }
  });
});

describe("the group value of a prefix route", () => {
  const sqlite = engineNamed("sqlite");
  test("the published name is written to the group column, so reports.daily and reports.monthly stay apart", async () => {
    const url = sqlite.url();
    const db = await sqlite.connect(url);
    const table = unique("rt_group");
    try {
      await createTable(sqlite, db, table);
      const spec = specOf(table, "lease");
      const broker = SqlBroker.fromUrl(url).route(spec, "reports.*");
      const app = await new App({ name: "g", version: "0", logger: silentLogger }).withBroker(broker, (b) => b).start();
      try {
        await broker.publish("reports.daily", { n: 1 });
        await broker.publish("reports.monthly", { n: 2 });
        const published = await broker.publishMany("reports.daily", [{ n: 3 }]);
        expect(published).toHaveLength(1);
      } finally {
        await app.stop();
      }
      const rows = await sql<{ grp: string; headers: string | null }>`SELECT grp, headers FROM ${sql.id(table)} ORDER BY id`.execute(db);
      expect(rows.rows.map((r) => r.grp)).toEqual(["reports.daily", "reports.monthly", "reports.daily"]);
      expect(rows.rows.map((r) => r.headers)).toEqual([null, null, null]);
    } finally {
      await db.destroy();
    }
  });

  test("headers on a table without a headers column are refused at run time too (Declaration)", async () => {
    const url = sqlite.url();
    const db = await sqlite.connect(url);
    const table = unique("rt_nohdr");
    try {
      await sql`CREATE TABLE ${sql.id(table)} (id INTEGER PRIMARY KEY, locked_until TEXT, payload TEXT NOT NULL)`.execute(db);
      const spec = defineInbox({ table, columns: { id: field.id().generated(), locked_until: field.lease(), payload: field.payload() } });
      const broker = SqlBroker.fromUrl(url).route(spec, "jobs");
      const app = await new App({ name: "h", version: "0", logger: silentLogger }).withBroker(broker, (b) => b).start();
      try {
        const name: string = "jobs"; // a name the type does not know compiles; the table still has no headers column
        const error = await broker.publish(name, {}, { headers: { a: "b" } }).catch((e: unknown) => e);
        expect(isSqlInboxError(error, "Declaration")).toBe(true);
        expect((error as Error).message).toContain("a publish with headers needs a headers column");
      } finally {
        await app.stop();
      }
    } finally {
      await db.destroy();
    }
  });
});

describe.each(matrix)("headers in a batch on $engine.name × $form", ({ engine, form }) => {
  test("each row of a batch reads its own headers through ctx.rows[i]", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`rb_${form}`);
    try {
      await createTable(engine, db, table);
      const spec = specOf(table, form) as never;
      const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } }).route(spec, "batch");
      const seen: Array<{ n: number; headers: Readonly<Record<string, string>> }> = [];
      const batch = subscriber.batch(InboxQueue.of(spec, "batch").batch(4).pollInterval(50), async (jobs: readonly unknown[], ctx) => {
        jobs.forEach((job, i) => {
          const row = ctx.rows[i] as unknown as { get(k: typeof keys.headers): Readonly<Record<string, string>> };
          seen.push({ n: (job as { n: number }).n, headers: row.get(keys.headers) });
        });
      });
      await broker.publish("batch", { n: 1 } as never, { headers: { traceparent } } as never);
      await broker.publish("batch", { n: 2 } as never);
      await broker.publish("batch", { n: 3 } as never, { headers: { tenant: "acme" } } as never);
      const running = await new App({ name: "rb", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(batch)).start();
      try {
        await until(() => seen.length === 3, 10_000, "three rows");
      } finally {
        await running.stop();
      }
      expect([...seen].sort((a, b) => a.n - b.n)).toEqual([
        { n: 1, headers: { traceparent } },
        { n: 2, headers: {} },
        { n: 3, headers: { tenant: "acme" } },
      ]);
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
