/**
 * Row mode: a table without a payload column hands each handler the row itself, under the keys
 * the description gives — what `RowOf` types — as its claim left it, on every engine × form:
 * the attempt as counted and the lease as stamped, even where the claim read the row before
 * stamping it (MySQL/MariaDB's locking select, an advisory candidate).
 */
import { Kysely, MysqlDialect, sql } from "kysely";
import { createPool } from "mysql2";
import { describe, expect, test } from "vitest";
import { defineInbox, field } from "@sqlinbox/core";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { App, InboxQueue, SqlBroker, keys, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { engineNamed, selects, unique, type TestEngine } from "../support/engines.js";
import { deferred } from "../support/fixtures.js";
import type { AnyKysely } from "../../src/drivers/database.js";

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

/** The row-mode description of the exports table in each claim form: the same columns, the form's own role. */
function exportsOf(table: string, form: ClaimForm) {
  const columns = {
    id: field.id<number>().generated(),
    attempt: field.attempt().generated(),
    customer_id: field.data<string>(),
    amount: field.data("amount_cents").holds<number>(),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "export-{customer_id}" });
  return defineInbox({ table, columns });
}

interface ReceivedRow {
  readonly row: Readonly<Record<string, unknown>>;
  readonly ctxAttempt: number;
  /** The row as the database holds it while the handler runs (where the claim committed: lease, advisory). */
  readonly stored: Readonly<Record<string, unknown>> | undefined;
}

describe.each(matrix)("row mode on $engine.name × $form", ({ engine, form }) => {
  test("the handler receives the row as claimed: the attempt as counted, the lease as stamped; data columns under their keys", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("row_mode");
    try {
      await createExports(engine, db, table);
      const Exports = exportsOf(table, form);
      const received = deferred<ReceivedRow>();
      const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(Exports, "exports");
      const queue = InboxQueue.of(Exports, "exports").pollInterval(50);
      const sub = subscriber(queue, async (row, ctx) => {
        // The lease and advisory claims committed before the handler: the table shows what they wrote.
        const stored =
          form === "rowLock"
            ? undefined
            : ((await sql<Record<string, unknown>>`SELECT attempt, locked_until FROM ${sql.id(table)} WHERE id = ${row.id}`.execute(db)).rows[0] ?? {});
        received.resolve({ row, ctxAttempt: ctx.get(keys.attempt), stored });
      });
      const app = await new App({ name: "row-mode", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        const before = Date.now();
        await broker.publish("exports", { customer_id: "c-42", amount: 1250 });
        const { row, ctxAttempt, stored } = await received.promise;
        expect(Object.keys(row).sort()).toEqual(form === "lease" ? ["amount", "attempt", "customer_id", "id", "lockedUntil"] : ["amount", "attempt", "customer_id", "id"]);
        expect(Number(row["id"])).toBe(1);
        expect(row["customer_id"]).toBe("c-42");
        expect(row["amount"]).toBe(1250);
        // The column starts at 1 and the claim counted one attempt; the context reads the attempt before counting.
        expect(row["attempt"]).toBe(2);
        expect(ctxAttempt).toBe(1);
        if (stored !== undefined) expect(Number(stored["attempt"])).toBe(row["attempt"]);
        if (form === "lease") {
          // The deadline this claim wrote, as the driver reads it: a Date on Postgres, UTC text on MariaDB and SQLite.
          const lockedUntil = row["lockedUntil"];
          expect(typeof lockedUntil).toBe(engine.engine === "postgres" ? "object" : "string");
          expect(lockedUntil).toEqual(stored?.["locked_until"]);
          const deadline = lockedUntil instanceof Date ? lockedUntil : new Date(`${String(lockedUntil).replace(" ", "T")}${engine.engine === "mysql" ? "Z" : ""}`);
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

describe.runIf(selects("mariadb"))("row mode on MariaDB through fromKysely, a mysql2 pool without dateStrings", () => {
  const mariadb = engineNamed("mariadb");

  test("the lease as stamped arrives as a Date, as that pool reads DATETIME, equal to the stored deadline", async () => {
    const url = mariadb.url();
    const db = await mariadb.connect(url);
    const table = unique("row_mode_dates");
    // timezone "Z", no dateStrings: mysql2 hands DATETIME back as a Date (the app's own pool, not one sqlinbox made).
    const own = new Kysely<unknown>({ dialect: new MysqlDialect({ pool: createPool({ uri: url.replace(/^mariadb:/, "mysql:"), connectionLimit: 4, timezone: "Z" }) }) });
    try {
      await createExports(mariadb, db, table);
      const Exports = exportsOf(table, "lease");
      const received = deferred<ReceivedRow>();
      const broker = SqlBroker.fromKysely(own).route(Exports, "exports");
      const sub = subscriber(InboxQueue.of(Exports, "exports").pollInterval(50), async (row, ctx) => {
        const stored = (await sql<Record<string, unknown>>`SELECT attempt, locked_until FROM ${sql.id(table)} WHERE id = ${row.id}`.execute(own)).rows[0];
        received.resolve({ row, ctxAttempt: ctx.get(keys.attempt), stored });
      });
      const app = await new App({ name: "row-mode", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        await broker.publish("exports", { customer_id: "c-7", amount: 10 });
        const { row, stored } = await received.promise;
        expect(row["lockedUntil"]).toBeInstanceOf(Date);
        expect(stored?.["locked_until"]).toBeInstanceOf(Date);
        expect(row["lockedUntil"]).toEqual(stored?.["locked_until"]);
        expect(row["attempt"]).toBe(2);
      } finally {
        await app.stop();
      }
    } finally {
      await mariadb.dropTable(db, table).catch(() => {});
      await own.destroy();
      await db.destroy();
    }
  });
});
