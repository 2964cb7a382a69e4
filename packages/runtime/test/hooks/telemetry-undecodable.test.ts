/**
 * OpenTelemetry through the public `undecodable` event, on every engine × form: a row whose payload
 * cannot be decoded reaches no handler (so no middleware), yet gets its process span and its
 * deliveries point with the outcome `undecodable`, as it did before the instrumentation moved onto the hooks.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { createJobsTable, jobsSpecOf, matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";
import { startOtelSdk, sumOf, type OtelSdk } from "../support/otel-sdk.js";

let sdk: OtelSdk;
beforeAll(() => {
  sdk = startOtelSdk();
});
afterAll(async () => {
  await sdk.shutdown();
});

describe.each(matrix)("OpenTelemetry of an undecodable row on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("a process span and a deliveries point with the outcome undecodable; the good row's are ack", async () => {
    const table = unique(`otu_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs");
    let handled = 0;
    const app = new App({ name: "t", version: "0", logger: silentLogger }).withBroker(broker, (b) =>
      b.include(
        subscriber(InboxQueue.of(spec, "jobs").workers(1).pollInterval(50), async () => {
          handled++;
        }),
      ),
    );
    const running = await app.start();
    const mine = (s: { attributes: Record<string, unknown> }) => s.attributes["db.collection.name"] === table;
    try {
      await db
        .insertInto(table)
        .values({ k: "bad", payload: Buffer.from("{not json") })
        .execute();
      await broker.publish("jobs", { n: 1 }, { columns: { k: "k1" } });
      await until(() => handled === 1 && sdk.spansNamed("jobs process").filter(mine).length === 2, 10_000, "both process spans");
      const outcomes = sdk
        .spansNamed("jobs process")
        .filter(mine)
        .map((s) => s.attributes["sqlinbox.outcome"])
        .sort();
      expect(outcomes).toEqual(["ack", "undecodable"]);
      const points = await sdk.points("sqlinbox.deliveries");
      expect(sumOf(points, { "db.collection.name": table, "sqlinbox.outcome": "undecodable" })).toBe(1);
      expect(sumOf(points, { "db.collection.name": table, "sqlinbox.outcome": "ack" })).toBe(1);
    } finally {
      await running.stop();
      await broker.close();
      await engine.dropTable(db, table);
    }
  });
});
