/**
 * Tables in a named schema: a Postgres schema, a second MariaDB database. A lease, a row-lock and an
 * advisory subscription each drain a table that exists only there (the connection's own schema has
 * none, so every statement, the schema check included, must name it); MariaDB's lock names use the
 * table's database. SQLite has no schemas: refused at startup, naming the table.
 */
import { InboxSpec, column, payloadOf, type ClaimForm } from "@sqlinbox/core/internal";
import { mysqlLockName } from "@sqlinbox/kysely-dialects/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, isSqlInboxError, silentLogger, subscriber } from "../../src/index.js";
import { FORMS, until } from "../support/claim-forms.js";
import { engineNamed, engines, selects, unique, type TestEngine } from "../support/engines.js";

const SCHEMA = "sqlinbox_publish_elsewhere";

async function createInSchema(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(SCHEMA, table);
  if (engine.engine === "postgres") {
    await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(SCHEMA)}`.execute(db);
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, k TEXT NOT NULL DEFAULT 'k', payload TEXT NOT NULL)`.execute(
      db,
    );
  } else {
    await sql`CREATE DATABASE IF NOT EXISTS ${sql.id(SCHEMA)}`.execute(db);
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, k VARCHAR(64) NOT NULL DEFAULT 'k', payload TEXT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

interface Job {
  readonly n: number;
}

function specIn(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated()).schema(SCHEMA).attempt(column("attempt").generated()).data(column("k"));
  if (form === "lease") return base.lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
  if (form === "advisory") return base.advisoryLock("{k}").payload(column("payload"), payloadOf<Job>());
  return base.payload(column("payload"), payloadOf<Job>());
}

const servers = engines.filter((e) => e.engine !== "sqlite");

describe.each(servers.flatMap((engine) => FORMS.map((form) => ({ engine, form }))))("a table in another schema on $engine.name × $form", ({ engine, form }) => {
  test("publishMany and a subscription drain it; the connection's own schema has no such table", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`sch_${form}`);
    try {
      await createInSchema(engine, db, table);
      const spec = specIn(table, form);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } }).route(spec as never, "jobs");
      const seen: number[] = [];
      const lockNamesHeld: unknown[] = [];
      // Every row's key is the column default "k": advisory rows run one at a time, and the lock name is known.
      const sub = subscriber(
        InboxQueue.of(spec as never, "jobs")
          .pollInterval(50)
          .workers(2)
          .batch(4),
        async (job: unknown) => {
          seen.push((job as Job).n);
          if (form === "advisory" && engine.engine === "mysql" && lockNamesHeld.length === 0) {
            // The lock of this delivery's key is named after the table's database, not the connection's.
            const key = `${SCHEMA}.${table}:k`;
            const held = await sql<{ held: unknown }>`SELECT IS_USED_LOCK(${mysqlLockName(SCHEMA, key)}) AS held`.execute(db);
            lockNamesHeld.push(held.rows[0]?.held);
          }
        },
      );
      const app = await new App({ name: "schema", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        await broker.publishMany("jobs", Array.from({ length: 12 }, (_, n) => ({ n })) as never);
        await until(() => seen.length === 12, 15_000, "every row");
      } finally {
        await app.stop();
      }
      expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, n) => n));
      if (form === "advisory" && engine.engine === "mysql") expect(lockNamesHeld[0]).not.toBeNull();
      const left = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.id(SCHEMA, table)}`.execute(db);
      expect(Number(left.rows[0]?.n)).toBe(0);
      const own = await sql`SELECT 1 FROM ${sql.id(table)}`.execute(db).catch((e: unknown) => e);
      expect(own).toBeInstanceOf(Error);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(SCHEMA, table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});

describe.runIf(selects("sqlite"))("schemas on SQLite", () => {
  const sqlite = engineNamed("sqlite");
  test("refused at startup with UnsupportedForm naming the table", async () => {
    const spec = InboxSpec.table("jobs_elsewhere", column("id").generated()).schema("jobs").lease(column("locked_until")).payload(column("payload"));
    const broker = SqlBroker.fromUrl(sqlite.url()).route(spec, "jobs");
    const app = new App({ name: "s", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)));
    const error = await app.start().catch((e: unknown) => e);
    expect(isSqlInboxError(error, "UnsupportedForm")).toBe(true);
    expect((error as Error).message).toBe('UnsupportedForm: the table is described in schema "jobs", and sqlite has no schemas: describe it without one (table "jobs_elsewhere")');
  });
});
