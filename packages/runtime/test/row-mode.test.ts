/**
 * Row mode: a table without a payload column hands each handler the row itself, under the keys
 * the description gives, with the values the claim read — what `RowOf` types.
 */
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import { defineInbox, field } from "@sqlinbox/core";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../src/index.js";
import { engines, unique, type TestEngine } from "./engines.js";
import { deferred } from "./fixtures.js";
import type { AnyKysely } from "../src/database.js";

afterAll(() => {
  for (const e of engines) e.cleanup();
});

async function createExports(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, customer_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)`.execute(
      db,
    );
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id SERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, customer_id TEXT NOT NULL, amount_cents INTEGER NOT NULL)`.execute(
      db,
    );
  } else {
    await sql`CREATE TABLE ${t} (id INT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, customer_id VARCHAR(64) NOT NULL, amount_cents INT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

describe.each(engines)("row mode on $name (lease form)", (engine) => {
  test("the handler receives the row: id, attempt and lease by role, data columns under their keys", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("row_mode");
    try {
      await createExports(engine, db, table);
      const Exports = defineInbox({
        table,
        columns: {
          id: field.id<number>().generated(),
          attempt: field.attempt().generated(),
          lockedUntil: field.lease("locked_until"),
          customer_id: field.data<string>(),
          amount: field.data("amount_cents").holds<number>(),
        },
      });
      const received = deferred<{
        readonly id: number;
        readonly attempt: number;
        readonly lockedUntil: Date | string | null;
        readonly customer_id: string;
        readonly amount: number;
      }>();
      const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } });
      const sub = subscriber(InboxQueue.of(Exports, "exports").lease(30_000).pollInterval(50), async (row) => {
        received.resolve(row);
      });
      const app = await new App({ name: "row-mode", version: "0", logger: silentLogger }).withBroker(broker.route(Exports, "exports"), (b) => b.include(sub)).start();
      try {
        const before = Date.now();
        await broker.publish("exports", { customer_id: "c-42", amount: 1250 });
        const row = await received.promise;
        expect(Object.keys(row).sort()).toEqual(["amount", "attempt", "customer_id", "id", "lockedUntil"]);
        expect(Number(row.id)).toBe(1);
        expect(row.customer_id).toBe("c-42");
        expect(row.amount).toBe(1250);
        expect(typeof row.attempt).toBe("number");
        if (engine.name === "mariadb") {
          // MySQL/MariaDB claim with SELECT … FOR UPDATE, then stamp: the row handed over is the one read
          // before the stamp (attempt not yet counted, no deadline), hence `Date | string | null` in the type.
          expect(row.attempt).toBe(1);
          expect(row.lockedUntil).toBeNull();
        } else {
          // the deadline this claim wrote, as the driver reads it: a Date on Postgres, ISO-8601 text on SQLite
          expect(row.attempt).toBe(2);
          expect(typeof row.lockedUntil).toBe(engine.engine === "sqlite" ? "string" : "object");
          const deadline = row.lockedUntil instanceof Date ? row.lockedUntil : new Date(String(row.lockedUntil));
          expect(deadline.getTime()).toBeGreaterThan(before);
        }
      } finally {
        await app.stop();
      }
    } finally {
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
