/**
 * `priority` and `processedAt` live, on every engine × form: a smaller priority is claimed
 * first whatever the id order, and an ack marks `processed_at` instead of deleting, so the row
 * stays and is never claimed again.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";

const ROWS = 8;

async function createTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, prio INTEGER NOT NULL, processed_at TEXT, payload TEXT NOT NULL)`.execute(
      db,
    );
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, prio INTEGER NOT NULL, processed_at TIMESTAMPTZ, payload TEXT NOT NULL)`.execute(
      db,
    );
  } else {
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, prio INT NOT NULL, processed_at DATETIME(6) NULL, payload TEXT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

function specOf(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    prio: field.priority(),
    processed_at: field.processedAt(),
    payload: field.payload<{ n: number }>(),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, locked_until: field.lease() } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{id}" });
  return defineInbox({ table, columns });
}

describe.each(matrix)("priority and processedAt on $engine.name × $form", ({ engine, form }) => {
  test("rows are handled smallest priority first, and an ack marks processed_at, keeping the row unclaimed", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`prio_${form}`);
    try {
      await createTable(engine, db, table);
      // Ids 1…8 with priorities 8…1: priority order is the reverse of id order.
      const rows = Array.from({ length: ROWS }, (_, i) => ({ prio: ROWS - i, payload: JSON.stringify({ n: i }) }));
      await db.insertInto(table).values(rows).execute();
      const spec = specOf(table, form);
      const handled: number[] = [];
      const sub = subscriber(
        InboxQueue.of(spec as never, "jobs")
          .pollInterval(50)
          .workers(1)
          .batch(1),
        async (job: unknown) => void handled.push((job as { n: number }).n),
      );
      const running = await new App({ name: "prio", version: "0", logger: silentLogger })
        .withBroker(SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec as never, "jobs"), (b) => b.include(sub))
        .start();
      try {
        await until(() => handled.length === ROWS, 10_000, "every row");
        // Nothing is handled twice: processed rows stay in the table but are never claimed again.
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        await running.stop();
      }
      expect(handled).toEqual([7, 6, 5, 4, 3, 2, 1, 0]);
      const left = await sql<{ n: number; processed: number }>`SELECT count(*) AS n, count(processed_at) AS processed FROM ${sql.id(table)}`.execute(db);
      expect(Number(left.rows[0]?.n)).toBe(ROWS);
      expect(Number(left.rows[0]?.processed)).toBe(ROWS);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});
