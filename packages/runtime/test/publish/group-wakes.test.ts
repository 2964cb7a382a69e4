/**
 * On a table with a group column, a publish wakes only its group's subscriptions in this process: a
 * row of another group, inserted without a wake, waits for that group's poll. On every engine.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterEach, describe, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, createInboxTable, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { TestApp } from "../../src/testing/index.js";
import { brokerParts } from "../../src/publish/sql-broker.js";
import { engines, unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";
import { sleep } from "../support/sleep.js";

function colorSpec(table: string) {
  return defineInbox({
    table,
    columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), grp: field.group(), payload: field.payload<{ readonly n: number }>() },
  });
}

describe.each(engines)("group wakes on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test("a publish to one group wakes its subscription and leaves the other group's to its poll", async () => {
    const table = unique("group_wakes");
    const spec = colorSpec(table);
    await createInboxTable(db, spec);
    cleanups.push(() => engine.dropTable(db, table));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } })
      .route(spec, "reds")
      .route(spec, "blues");
    const consume = (name: "reds" | "blues") => subscriber(InboxQueue.of(spec, name).lease(5000).pollInterval(30_000), async () => {});
    const reds = consume("reds");
    const blues = consume("blues");
    const t = await TestApp.startLive(new App({ name: "group-wakes", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(reds).include(blues)));
    cleanups.push(() => t.stop());
    await sleep(300); // the first claims (empty) are done: from now on only a wake or the 30 s poll claims
    // A blue row no publish announced: only a wake of the blues subscription (or its poll) claims it. Written on the
    // app's own connection: on SQLite another connection's commit to the file wakes every subscription (the file watch).
    const own = brokerParts(broker).connection.require().db;
    await sql`INSERT INTO ${sql.id(table)} (grp, payload) VALUES (${"blues"}, ${Buffer.from(JSON.stringify({ n: 0 }))})`.execute(own);
    await t.publish("reds", { n: 1 });
    await t.waitFor(() => t.calls(reds).some((c) => c.outcome !== undefined), 2000, "the red job");
    await sleep(300);
    t.assertNotCalled(blues);
    await t.publish("blues", { n: 2 });
    await t.waitFor(() => t.calls(blues).length === 2, 2000, "both blue jobs");
  });
});
