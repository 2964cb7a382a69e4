/**
 * FIFO groups live, on every engine × form that has them (row lock, lease; an advisory key and
 * fifo exclude each other): two apps, each on its own pool with `workers(4)`, drain two groups.
 * Within a group the rows run one at a time (never two in work, across both apps) and in id order.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber, type RunningApp } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";

const PER_GROUP = 12;
const GROUPS = ["a", "b"] as const;

async function createTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, grp TEXT NOT NULL, payload TEXT NOT NULL)`.execute(db);
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, grp TEXT NOT NULL, payload TEXT NOT NULL)`.execute(db);
  } else {
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, grp VARCHAR(64) NOT NULL, payload TEXT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

function specOf(table: string, form: ClaimForm) {
  const columns = { id: field.id().generated(), attempt: field.attempt().generated(), grp: field.group(), payload: field.payload<{ n: number }>() };
  if (form === "lease") return defineInbox({ table, fifo: true, columns: { ...columns, locked_until: field.lease() } });
  return defineInbox({ table, fifo: true, columns });
}

describe.each(matrix.filter((m) => m.form !== "advisory"))("fifo on $engine.name × $form", ({ engine, form }) => {
  test("two apps with workers(4): one row per group in work, in id order", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`fifo_${form}`);
    const running: RunningApp[] = [];
    try {
      await createTable(engine, db, table);
      // Interleaved: a0, b0, a1, b1, … so id order within each group is n order.
      const rows = Array.from({ length: PER_GROUP * GROUPS.length }, (_, i) => ({ grp: GROUPS[i % 2] as string, payload: JSON.stringify({ n: Math.floor(i / 2) }) }));
      await db.insertInto(table).values(rows).execute();
      const spec = specOf(table, form);
      const order: Record<string, number[]> = { a: [], b: [] };
      const inWork: Record<string, number> = { a: 0, b: 0 };
      let overlaps = 0;
      const appOf = (name: string) => {
        const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } });
        let app = new App({ name, version: "0", logger: silentLogger });
        for (const group of GROUPS) {
          const sub = subscriber(
            InboxQueue.of(spec as never, group)
              .pollInterval(30)
              .workers(4)
              .batch(4),
            async (job: unknown) => {
              if (++(inWork[group] as number) > 1) overlaps++;
              order[group]?.push((job as { n: number }).n);
              await new Promise((r) => setTimeout(r, 5));
              (inWork[group] as number)--;
            },
          );
          app = app.withBroker(broker.route(spec as never, group), (b) => b.include(sub));
        }
        return app;
      };
      running.push(await appOf("one").start(), await appOf("two").start());
      await until(() => (order["a"]?.length ?? 0) + (order["b"]?.length ?? 0) === PER_GROUP * GROUPS.length, 20_000, "every row");
      const expected = Array.from({ length: PER_GROUP }, (_, n) => n);
      expect(overlaps).toBe(0);
      expect(order["a"]).toEqual(expected);
      expect(order["b"]).toEqual(expected);
    } finally {
      for (const app of running) await app.stop();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});
