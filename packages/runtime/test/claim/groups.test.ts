/**
 * A table with a group column: each route name selects its group, so two subscriptions on one
 * table never take each other's rows — in every form, on every engine that has it.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";

async function createGroupTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
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

function groupSpec(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    grp: field.group(),
    payload: field.payload<{ n: number }>(),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, locked_until: field.lease() } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{id}" });
  return defineInbox({ table, columns });
}

describe.each(matrix)("groups on $engine.name × $form", ({ engine, form }) => {
  test("each route name claims only the rows published to it", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`grp_${form}`);
    try {
      await createGroupTable(engine, db, table);
      const spec = groupSpec(table, form);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } });
      const seen: Record<string, number[]> = { reds: [], blues: [] };
      // The spec's type differs per form; the matrix runs one body for all of them.
      const consume = (name: "reds" | "blues") =>
        subscriber(
          InboxQueue.of(spec as never, name)
            .pollInterval(50)
            .workers(2)
            .batch(4),
          async (job: unknown) => void seen[name]?.push((job as { n: number }).n),
        );
      const app = new App({ name: "groups", version: "0", logger: silentLogger })
        .withBroker(broker.route(spec as never, "reds"), (b) => b.include(consume("reds")))
        .withBroker(broker.route(spec as never, "blues"), (b) => b.include(consume("blues")));
      const running = await app.start();
      try {
        const routed = broker.route(spec as never, "reds").route(spec as never, "blues");
        for (let n = 0; n < 10; n++) await routed.publish(n % 2 === 0 ? "reds" : "blues", { n });
        await until(() => (seen["reds"]?.length ?? 0) + (seen["blues"]?.length ?? 0) === 10, 10_000, "every row");
      } finally {
        await running.stop();
      }
      expect([...(seen["reds"] ?? [])].sort((a, b) => a - b)).toEqual([0, 2, 4, 6, 8]);
      expect([...(seen["blues"] ?? [])].sort((a, b) => a - b)).toEqual([1, 3, 5, 7, 9]);
      const left = await sql<{ n: number }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db);
      expect(Number(left.rows[0]?.n)).toBe(0);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  });
});
