/**
 * Row lock with `.sharedTransaction()` on PostgreSQL and MariaDB: one claim takes a whole batch
 * in one transaction (one connection for all its rows), more rows than there are workers, and
 * the rows wait in the buffer; a stop with rows still buffered lets them leave with their attempt
 * taken back, and the transaction commits the settlements of the rows in work. The acks of a claim
 * go in one statement before its commit.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { Kysely, MysqlDialect, PostgresDialect, sql, type LogEvent } from "kysely";
import { createPool } from "mysql2";
import pg from "pg";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, silentLogger, subscriber, type LogFields, type Logger } from "../../../src/index.js";
import { createJobsTable, insertJobs, readJobs, serverEngines, until, type Job } from "../../support/claim-forms.js";
import { unique } from "../../support/engines.js";
import { deferred, useEngineConnection } from "../../support/fixtures.js";

/** Rows of `table` locked by some transaction now: the ones a `SKIP LOCKED` read leaves out. */
async function lockedRows(db: AnyKysely, table: string): Promise<number> {
  const total = (await readJobs(db, table)).length;
  const free = await db.transaction().execute(async (trx) => (await sql`SELECT id FROM ${sql.id(table)} FOR UPDATE SKIP LOCKED`.execute(trx)).rows.length);
  return total - free;
}

describe.each(serverEngines)("shared row-lock claims on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("batch(64).workers(8): one transaction takes 64 rows, not 8; a stop gives the buffered ones back unspent and commits the rows in work", async () => {
    const table = unique("shared_ahead");
    await createJobsTable(engine, db, table);
    const spec = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).data(column("k")).payload(column("payload"), payloadOf<Job>());
    const release = deferred();
    const delivered: number[] = [];
    const errors: Array<{ message: string; code: unknown }> = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: (fields: LogFields, message: string) => errors.push({ message, code: fields["code"] }),
    };
    const deliveredIds = new Set<number>();
    const sub = subscriber(InboxQueue.of(spec, "jobs").batch(64).workers(8).sharedTransaction().pollInterval(50), async (job, ctx) => {
      delivered.push(job.n);
      deliveredIds.add(Number(ctx.id));
      await release.promise;
      return HandlerOutcome.ack();
    });
    try {
      await insertJobs(db, table, 100);
      const before = await readJobs(db, table);
      const app = await new App({ name: "shared", version: "0", logger })
        .withBroker(SqlBroker.fromUrl(url, { pool: { max: 9 } }).route(spec, "jobs"), (b) => b.include(sub))
        .start();
      try {
        await until(() => delivered.length === 8, 5_000, "every worker in work");
        // One claim, one transaction: its 64 rows are locked, 8 in work and 56 waiting in the buffer.
        await until(async () => (await lockedRows(db, table)) === 64, 5_000, "the shared claim's 64 rows locked");
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(delivered).toHaveLength(8);
        expect(await lockedRows(db, table)).toBe(64);
      } finally {
        const stopping = app.stop();
        // The transaction ends once its rows in work arrived: their acks commit, the buffered rows' attempts are taken back.
        setTimeout(() => release.resolve(), 100);
        const report = await stopping;
        expect(report).toMatchObject({ givenBack: 56, finished: 8, timedOut: false });
      }
      // The 8 rows in work are acked (gone); every other row is as it was before the claim: no attempt spent.
      expect(delivered).toHaveLength(8);
      expect(deliveredIds.size).toBe(8);
      expect(await readJobs(db, table)).toEqual(before.filter((row) => !deliveredIds.has(row.id)));
      expect(await lockedRows(db, table)).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await engine.dropTable(db, table);
    }
  });

  test("batch(64).workers(8) drains 300 rows, each acked once", async () => {
    const table = unique("shared_drain");
    await createJobsTable(engine, db, table);
    const spec = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).data(column("k")).payload(column("payload"), payloadOf<Job>());
    const seen: number[] = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").batch(64).workers(8).sharedTransaction().pollInterval(50), async (job) => {
      seen.push(job.n);
      return HandlerOutcome.ack();
    });
    try {
      await insertJobs(db, table, 300);
      const app = await new App({ name: "shared", version: "0", logger: silentLogger })
        .withBroker(SqlBroker.fromUrl(url, { pool: { max: 9 } }).route(spec, "jobs"), (b) => b.include(sub))
        .start();
      try {
        await until(async () => (await readJobs(db, table)).length === 0, 10_000, "the table to drain");
      } finally {
        await app.stop();
      }
      expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, n) => n));
    } finally {
      await engine.dropTable(db, table);
    }
  });

  test("a claim's acks and drops go in one statement before its commit; processedAt rows are marked, a retried row comes back", async () => {
    const table = unique("shared_acks");
    const t = sql.id(table);
    if (engine.engine === "postgres")
      await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, processed_at TIMESTAMPTZ, k TEXT NOT NULL, payload BYTEA NOT NULL)`.execute(db);
    else
      await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, processed_at DATETIME(6) NULL, k VARCHAR(64) NOT NULL, payload LONGBLOB NOT NULL) ENGINE=InnoDB`.execute(
        db,
      );
    const spec = InboxSpec.table(table, column("id").generated())
      .attempt(column("attempt").generated())
      .processedAt(column("processed_at"))
      .data(column("k"))
      .payload(column("payload"), payloadOf<Job>());
    // The app's own Kysely, whose log sees every statement sqlinbox runs on it.
    const statements: string[] = [];
    const log = (event: LogEvent) => void statements.push(event.query.sql);
    const own: AnyKysely =
      engine.engine === "postgres"
        ? new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 9 }) }), log })
        : new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: url.replace(/^mariadb:/, "mysql:"), connectionLimit: 9, dateStrings: true }) }), log });
    const attempts = new Map<number, number[]>();
    // Rows 0…59, claims of 20: n % 3 = 0 acks, 1 drops, 2 retries once, then acks.
    const sub = subscriber(InboxQueue.of(spec, "jobs").batch(20).workers(4).sharedTransaction().pollInterval(50), async (job, ctx) => {
      const seen = attempts.get(job.n) ?? [];
      seen.push(ctx.get(keys.attempt));
      attempts.set(job.n, seen);
      if (job.n % 3 === 1) return HandlerOutcome.drop();
      if (job.n % 3 === 2 && seen.length === 1) return HandlerOutcome.retry();
      return HandlerOutcome.ack();
    });
    try {
      await insertJobs(db, table, 60);
      const app = await new App({ name: "shared", version: "0", logger: silentLogger }).withBroker(SqlBroker.fromKysely(own).route(spec, "jobs"), (b) => b.include(sub)).start();
      try {
        await until(
          async () => Number((await sql<{ n: number }>`SELECT count(*) AS n FROM ${t} WHERE processed_at IS NULL`.execute(db)).rows[0]?.n) === 0,
          10_000,
          "every row processed",
        );
      } finally {
        await app.stop();
      }
      // Every row stays, marked processed; the retried ones were delivered twice, at attempts 1 and 2.
      expect(Number((await sql<{ n: number }>`SELECT count(*) AS n FROM ${t}`.execute(db)).rows[0]?.n)).toBe(60);
      for (let n = 0; n < 60; n++) expect(attempts.get(n)).toEqual(n % 3 === 2 ? [1, 2] : [1]);
      // One ack statement per claim that acked anything, never one per row: 60 acks and drops in a few statements.
      const acks = statements.filter((q) => /^update .{1,3}shared_acks\S* set .processed_at. = /.test(q));
      expect(acks.length).toBeGreaterThan(0);
      expect(acks.length).toBeLessThanOrEqual(10);
      // The ids as one array parameter on Postgres; on MariaDB a list (`in (?, ?)`), or `= ?` for a claim that acked one row
      // (a retried row claimed again alone).
      const shape = engine.engine === "postgres" ? / = any\(\$2\)$/ : /(\)|`id` = \?)$/;
      expect(acks.filter((q) => !shape.test(q))).toEqual([]);
    } finally {
      await engine.dropTable(db, table);
      await own.destroy();
    }
  });
});
