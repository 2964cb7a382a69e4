/**
 * A serialization failure (SQLSTATE 40001: Postgres SERIALIZABLE, CockroachDB and YugabyteDB's
 * retry class) is retried on claims and settlements where deadlocks are, on every server engine ×
 * form. The failure is the server's own: a trigger raises SQLSTATE 40001 on the first UPDATE and
 * the first DELETE of the queue table (a sequence counts them; sequences do not roll back). Every
 * row is then handled exactly once, nothing is logged as an error, and each retry is logged.
 * Inside a transaction the whole transaction runs again: the failed statement alone would run in
 * autocommit on what the rolled-back statements read (on Galera that delivered claimed rows twice).
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { Activity } from "../../src/activity.js";
import { Database, type AnyKysely } from "../../src/drivers/database.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { consumer, createJobsTable, dropScope, FORMS, insertJobs, readJobs, scopedUrl, serverEngines, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";

const ROWS = 5;

describe.each(serverEngines.flatMap((engine) => FORMS.map((form) => ({ engine, form }))))("$engine.name × $form", ({ engine, form }) => {
  let base: AnyKysely;
  beforeAll(async () => {
    base = await engine.connect(engine.url());
  });
  afterAll(async () => {
    await base.destroy();
  });

  test("a claim or settlement failing once with SQLSTATE 40001 runs again; every row handled once", async () => {
    const scope = unique("sqlinbox_ser").toLowerCase();
    const url = await scopedUrl(engine, base, scope);
    const db = engine.engine === "postgres" ? base : await engine.connect(url);
    const table = unique(`ser_${form}`).toLowerCase();
    const updates = `${table}_upd`;
    const deletes = `${table}_del`;
    try {
      await createJobsTable(engine, db, table);
      await insertJobs(db, table, ROWS);
      await failOnce(engine.engine, db, table, updates, "UPDATE");
      await failOnce(engine.engine, db, table, deletes, "DELETE");
      const c = consumer(url, table, form, { workers: 1 });
      const app = await c.app.start();
      await until(async () => (await readJobs(db, table)).length === 0, 20_000, "every row handled");
      await app.stop();
      expect(c.seen.map((s) => s.id).sort((a, b) => a - b)).toEqual([...new Set(c.seen.map((s) => s.id))].sort((a, b) => a - b));
      expect(c.seen).toHaveLength(ROWS);
      expect(c.errors).toEqual([]);
      // Each trigger that fired raised once: the DELETE of every form's ack, the UPDATE where the form writes one.
      const raised = (await fired(engine.engine, db, updates)) + (await fired(engine.engine, db, deletes));
      expect(await fired(engine.engine, db, deletes)).toBe(1);
      expect(c.warnings.filter((w) => w === "deadlock retried")).toHaveLength(raised);
      console.log(`${engine.name} × ${form}: ${raised} serialization failures raised and retried; ${ROWS} rows, each handled once`);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      for (const s of [updates, deletes]) await sql`DROP SEQUENCE IF EXISTS ${sql.id(s)}`.execute(db).catch(() => {});
      if (engine.engine === "postgres") await sql`DROP FUNCTION IF EXISTS ${sql.id(`${table}_fail`)}()`.execute(db).catch(() => {});
      if (db !== base) await db.destroy();
      await dropScope(engine, base, scope).catch(() => {});
    }
  });
});

/** A trigger raising SQLSTATE 40001 on the first `event` of `table` (its sequence `counter` at 1), never again. */
async function failOnce(engine: string, db: AnyKysely, table: string, counter: string, event: "UPDATE" | "DELETE"): Promise<void> {
  await sql`CREATE SEQUENCE ${sql.id(counter)}`.execute(db);
  if (engine === "postgres") {
    const fn = `${table}_fail`;
    await sql
      .raw(`CREATE OR REPLACE FUNCTION "${fn}"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval(TG_ARGV[0]) = 1 THEN RAISE EXCEPTION 'could not serialize access (test)' USING ERRCODE = 'serialization_failure'; END IF;
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
      END $$`)
      .execute(db);
    await sql.raw(`CREATE TRIGGER "${counter}" BEFORE ${event} ON "${table}" FOR EACH ROW EXECUTE FUNCTION "${fn}"('"${counter}"')`).execute(db);
    return;
  }
  await sql
    .raw(`CREATE TRIGGER \`${counter}\` BEFORE ${event} ON \`${table}\` FOR EACH ROW
      IF NEXTVAL(\`${counter}\`) = 1 THEN SIGNAL SQLSTATE '40001' SET MESSAGE_TEXT = 'could not serialize access (test)'; END IF`)
    .execute(db);
}

/** Whether the trigger counting on `counter` fired (1) or not (0): its sequence was read at least once. */
async function fired(engine: string, db: AnyKysely, counter: string): Promise<number> {
  const { rows } =
    engine === "postgres"
      ? await sql<{ n: unknown }>`SELECT CASE WHEN is_called THEN 1 ELSE 0 END AS n FROM ${sql.id(counter)}`.execute(db)
      : await sql<{ n: unknown }>`SELECT CASE WHEN next_not_cached_value > 1 THEN 1 ELSE 0 END AS n FROM ${sql.id(counter)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

describe.each(serverEngines)("$name: a conflict inside a transaction", (engine) => {
  test("runs the whole transaction again, never the failed statement alone (the server rolled the transaction back)", async () => {
    const db = await engine.connect(engine.url());
    const table = unique("ser_tx").toLowerCase();
    const counter = `${table}_upd`;
    try {
      await createJobsTable(engine, db, table);
      await insertJobs(db, table, 1);
      await failOnce(engine.engine, db, table, counter, "UPDATE");
      const logger = new MemoryLogger();
      const database = new Database(db, dialectFor(engine.engine), logger, new Activity());
      let runs = 0;
      let statements = 0;
      await database.transaction("claim", async (trx) => {
        runs++;
        const update = sql`UPDATE ${sql.id(table)} SET attempt = attempt + 1`.compile(trx);
        statements++;
        await database.execute("claim", update, trx);
      });
      expect(runs).toBe(2);
      expect(statements).toBe(2);
      expect(database.deadlocks).toBe(1);
      expect((await readJobs(db, table))[0]?.attempt).toBe(2);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await sql`DROP SEQUENCE IF EXISTS ${sql.id(counter)}`.execute(db).catch(() => {});
      if (engine.engine === "postgres") await sql`DROP FUNCTION IF EXISTS ${sql.id(`${table}_fail`)}()`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});
