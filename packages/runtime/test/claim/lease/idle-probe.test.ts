/**
 * An idle lease subscription on MariaDB, where a claim is a transaction of three round trips
 * (BEGIN, SELECT … FOR UPDATE SKIP LOCKED, COMMIT): while its last claim found nothing, each poll is
 * one unlocked read of the table and no transaction; a row inserted by another connection is still
 * taken at the next poll. Postgres and SQLite claim in one statement and have no probe.
 */
import { sql, Kysely, MysqlDialect, type LogEvent } from "kysely";
import { createPool } from "mysql2";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "../../../src/index.js";
import { until } from "../../support/claim-forms.js";
import { engineNamed, selects, unique } from "../../support/engines.js";
import { jobsSpec, useEngineConnection } from "../../support/fixtures.js";

const engine = engineNamed("mariadb");

// Only MariaDB has the probe (above): skipped only when SQLINBOX_ENGINES leaves MariaDB out.
describe.runIf(selects("mariadb"))("an idle lease subscription on mariadb", () => {
  let setup!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db: setup, url } = connected);
  });

  test("polls with one unlocked read and no transaction; a row another connection inserts is taken at the next poll", async () => {
    const table = unique("idle_probe").toLowerCase();
    const spec = jobsSpec(table);
    await createInboxTable(setup, spec);
    const statements: string[] = [];
    const db = new Kysely({
      dialect: new MysqlDialect({ pool: createPool({ uri: url.replace(/^mariadb:/, "mysql:"), connectionLimit: 4 }) }),
      log: (event: LogEvent) => void statements.push(event.query.sql),
    });
    const broker = SqlBroker.fromKysely(db).route(spec, "jobs");
    let polls = 0;
    const handled: number[] = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(50), async (job) => {
      handled.push(job.n);
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "idle", version: "0", logger: silentLogger })
      .on("claimed", () => void polls++)
      .withBroker(broker, (b) => b.include(sub))
      .start();
    try {
      await until(() => polls >= 3, 5000, "the first polls");
      statements.length = 0;
      const before = polls;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const idlePolls = polls - before;
      const onTable = statements.filter((s) => s.includes(table));
      const transactions = statements.filter((s) => /^\s*(begin|start transaction|commit|rollback)/i.test(s));
      expect(idlePolls).toBeGreaterThanOrEqual(8);
      // One read per poll (a poll may straddle the window's edges), none locking, no transaction.
      expect(Math.abs(onTable.length - idlePolls)).toBeLessThanOrEqual(1);
      expect(onTable.filter((s) => /for update/i.test(s))).toEqual([]);
      expect(transactions).toEqual([]);

      // Another connection's insert: no wake reaches this process, the probe finds it, the claim takes it.
      await sql`insert into ${sql.id(table)} (payload) values (${Buffer.from(JSON.stringify({ n: 7 }))})`.execute(setup);
      await until(() => handled.includes(7), 2000, "the row another connection inserted to be handled");
      expect(statements.some((s) => /for update skip locked/i.test(s))).toBe(true);
    } finally {
      await app.stop();
      await db.destroy();
      await sql`drop table if exists ${sql.id(table)}`.execute(setup);
    }
  });
});
