/**
 * The MQTT outbox relay on every engine × form: rows published in the application's transactions reach
 * subscribers at QoS 1, each with its `sqlinbox-id` and headers as user properties; a batch sent again
 * reaches them again, and an mqttInbox on the other side stores each row once; an order key keeps each
 * key's order; an MQTT 3.1.1 client is refused; the outbox table ends empty.
 */
import { randomUUID } from "node:crypto";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { App, HandlerOutcome, InboxQueue, type RunningApp, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import { sql } from "kysely";
import type { MqttClient } from "mqtt";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, formsOn, publishSixtyOrders, rowsIn, traceparentOf, inboxSpecOf, orderedOutboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { mqttInbox, mqttOutbox } from "../src/index.js";
import { MQTT_URL, connectMqtt, dropSession, recorder } from "./support/mqtt.js";

const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let client: MqttClient;
beforeAll(async () => {
  client = await connectMqtt();
});
afterAll(async () => {
  await client?.endAsync();
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }: { engine: TestEngine; form: ClaimForm }) => {
  const url = engine.url();
  const running: RunningApp[] = [];
  const sessions: string[] = [];
  const tables: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;

  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const app of running.splice(0)) await app.stop().catch(() => {});
    for (const session of sessions.splice(0)) await dropSession(session).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  const freshTable = (prefix: string) => {
    const table = unique(prefix).toLowerCase();
    tables.push(table);
    return table;
  };
  test("rows published in transactions reach subscribers with their ids and headers; the inbox on the other side stores each once", async () => {
    const outboxTable = freshTable("mqtt_outbox");
    const inboxTable = freshTable("mqtt_inbox");
    const Outbox = outboxSpecOf(outboxTable, form);
    const Inbox = inboxSpecOf(inboxTable);
    await createInboxTable(db, Outbox);
    await createInboxTable(db, Inbox);
    const base = `sqlinbox-test/${randomUUID()}`;
    const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
      .lease(2000)
      .route(Outbox, "orders")
      .route(Inbox, "orders.in");
    const N = 60;
    // Six transactions of ten rows (the traceparent of each in its headers), and one rolled back, never relayed.
    await publishSixtyOrders(db, (order, options) => broker.publish("orders", order, options));

    const seen = await recorder(`${base}/#`);
    const clientId = unique("billing");
    sessions.push(clientId);
    const inbox = mqttInbox(broker, "orders.in", { url: MQTT_URL, clientId, topic: `${base}/#`, logger: silentLogger });
    await inbox.start();
    // Row n = 5 fails once, after rows of its batch were published: the batch goes again, and so do their messages.
    let failed = false;
    const relay = mqttOutbox(
      InboxQueue.of(Outbox, "orders")
        .batch(16)
        .workers(2)
        .pollInterval(50)
        .onError(() => HandlerOutcome.retry()),
      {
        client,
        topic: (order) => {
          if (order.n === 5 && !failed) {
            failed = true;
            throw new Error("no topic yet");
          }
          return `${base}/${order.customer}`;
        },
      },
    );
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    running.push(app);
    try {
      await until(async () => (await rowsIn(db, outboxTable)) === 0, 20_000, "every outbox row acked");
      await until(async () => (await rowsIn(db, inboxTable)) === N && inbox.counts.stored + inbox.counts.duplicates === seen.received.length, 20_000, "every message stored");
    } finally {
      await inbox.stop();
      await app.stop();
      await seen.close();
    }
    expect(failed).toBe(true);
    const messages = seen.received;
    expect(messages.length).toBeGreaterThan(N);
    const ids = messages.map((m) => m.userProperties["sqlinbox-id"] as string);
    expect(new Set(ids).size).toBe(N);
    for (const m of messages) {
      const order = JSON.parse(m.body) as Order;
      expect(m.userProperties).toEqual({ traceparent: traceparentOf(order.n), "sqlinbox-id": expect.stringMatching(new RegExp(`^${outboxTable}:\\d+$`)) });
      expect(m.topic).toBe(`${base}/${order.customer}`);
    }
    expect(inbox.counts).toEqual({ stored: N, duplicates: messages.length - N });
    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(inboxTable)}`.execute(db);
    expect(new Set(rows.map((r) => r.message_id))).toEqual(new Set(ids));
    const sentHeaders = new Map(messages.map((m) => [m.userProperties["sqlinbox-id"] as string, m.userProperties["traceparent"]]));
    for (const r of rows) expect(typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers).toEqual({ traceparent: sentHeaders.get(r.message_id) });
  });

  if (form !== "advisory")
    test("an order key keeps each key's messages in id order", async () => {
      const table = freshTable("mqtt_ordered");
      const spec = orderedOutboxSpecOf(table, form);
      await createInboxTable(db, spec);
      const topic = `sqlinbox-test/${randomUUID()}`;
      const seen = await recorder(topic);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
        .lease(2000)
        .route(spec, "orders");
      const N = 90;
      const orders = Array.from({ length: N }, (_, n) => ({ n, customer: n % 4 }));
      await broker.publishMany("orders", orders, { columns: (o) => ({ customer: o.customer }) });
      const relay = mqttOutbox(InboxQueue.of(spec, "orders").batch(8).workers(4).pollInterval(50), { client, topic });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      running.push(app);
      try {
        await until(async () => (await rowsIn(db, table)) === 0, 30_000, "every ordered row acked");
        await until(() => seen.received.length >= N, 10_000, "every message received");
      } finally {
        await app.stop();
        await seen.close();
      }
      const bodies = seen.received.map((m) => JSON.parse(m.body) as Order);
      expect(bodies).toHaveLength(N);
      for (let c = 0; c < 4; c++) {
        expect(bodies.filter((o) => o.customer === c).map((o) => o.n)).toEqual(orders.filter((o) => o.customer === c).map((o) => o.n));
      }
    });

  test("a client that does not speak MQTT 5 is refused when the relay is made", async () => {
    const spec = outboxSpecOf(freshTable("mqtt_v4"), form);
    const v4 = await connectMqtt({ protocolVersion: 4 });
    try {
      expect(() => mqttOutbox(InboxQueue.of(spec, "orders"), { client: v4 })).toThrow(
        /mqttOutbox \(route "orders"\): the client speaks MQTT protocol version 4; connect it with \{ protocolVersion: 5 \}/,
      );
    } finally {
      await v4.endAsync();
    }
  });
});
