/**
 * A Postgres broker made from a URL runs its repeated statements (the claim, the ack, the publish) as
 * named prepared statements, which each session plans once: on by default, off with `preparedStatements:
 * false` and with `pooler: "transaction"` (a pooler in transaction mode hands each transaction any
 * server session). Checked on the server: every session of the broker's pool lists what it prepared.
 * Other engines ignore the option (their drivers send statements as before).
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, type BrokerOptions, HandlerOutcome, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { brokerParts } from "../../src/publish/sql-broker.js";
import { engineNamed, selects, unique } from "../support/engines.js";
import { jobsSpec } from "../support/fixtures.js";

const postgres = engineNamed("postgres");
const ROWS = 300;
const POOL = 4;

describe.runIf(selects("postgres"))("named prepared statements of a Postgres broker", () => {
  let setup: AnyKysely;
  beforeAll(async () => {
    setup = await postgres.connect(postgres.url());
  });
  afterAll(async () => {
    await setup?.destroy();
  });

  /** Drains ROWS rows through a broker with `options`, then returns what every session of its pool has prepared. */
  async function drain(options: BrokerOptions): Promise<string[]> {
    const table = unique("rt_prepared");
    await postgres.createLeaseTable(setup, table);
    try {
      const spec = jobsSpec(table);
      const broker = SqlBroker.fromUrl(postgres.url(), { pool: { max: POOL }, ...options }).route(spec, "jobs");
      let handled = 0;
      const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).batch(16).workers(2).pollInterval(50), async () => {
        handled++;
        return HandlerOutcome.ack();
      });
      const app = await new App({ name: "prepared", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      try {
        for (let n = 0; n < ROWS; n++) await broker.publish("jobs", { n });
        const deadline = Date.now() + 20_000;
        while (handled < ROWS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        expect(handled).toBe(ROWS);
        // One transaction on each of the pool's sessions at once (each waits for the others before it ends),
        // each reading what its session prepared.
        const db = brokerParts(broker).connection.require().db;
        let arrived = 0;
        const seen = await Promise.all(
          Array.from({ length: POOL }, () =>
            db.transaction().execute(async (trx) => {
              const rows = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'sqlinbox\\_%'`.execute(trx);
              arrived++;
              while (arrived < POOL) await new Promise((r) => setTimeout(r, 5));
              return rows.rows.map((r) => r.statement);
            }),
          ),
        );
        return [...new Set(seen.flat())];
      } finally {
        await app.stop();
      }
    } finally {
      await setup.schema.dropTable(table).ifExists().execute();
    }
  }

  test("by default: the claim, the ack and the publish are prepared on the sessions that ran them", async () => {
    const statements = await drain({});
    const listed = statements.join("\n");
    expect(
      statements.some((s) => s.startsWith('with "picked" as (select') && s.includes("for update skip locked") && s.includes("update")),
      listed,
    ).toBe(true);
    expect(
      statements.some((s) => s.startsWith("delete from") && s.includes('"locked_until" = $1 and "id" = any($2)')),
      listed,
    ).toBe(true);
    expect(
      statements.some((s) => s.startsWith("insert into")),
      listed,
    ).toBe(true);
  });

  test("`preparedStatements: false`, and a declared pooler in transaction mode: nothing prepared", async () => {
    expect(await drain({ preparedStatements: false })).toEqual([]);
    expect(await drain({ pooler: "transaction" })).toEqual([]);
  });
});
