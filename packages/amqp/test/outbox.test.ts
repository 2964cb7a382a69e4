/**
 * The RabbitMQ outbox relay on every engine × form: rows published in the application's transactions reach
 * the queues bound to the exchange, persistent, each with its `message_id` and headers; a batch sent again
 * reaches them again (RabbitMQ does not deduplicate), and an amqpInbox on the other side stores each row once;
 * an order key keeps each key's order in the queue; a message no queue is bound for fails its batch; the
 * outbox table ends empty.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { App, HandlerOutcome, InboxQueue, type RunningApp, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import type { Channel, ChannelModel } from "amqplib";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, formsOn, publishSixtyOrders, rowsIn, traceparentOf, inboxSpecOf, orderedOutboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { amqpInbox, amqpOutbox } from "../src/index.js";
import { connectAmqp, drainQueue } from "./support/amqp.js";

const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let connection: ChannelModel;
let admin: Channel;
beforeAll(async () => {
  connection = await connectAmqp();
  admin = await connection.createChannel();
});
afterAll(async () => {
  await connection?.close().catch(() => {});
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }: { engine: TestEngine; form: ClaimForm }) => {
  const url = engine.url();
  const running: RunningApp[] = [];
  const queues: string[] = [];
  const exchanges: string[] = [];
  const tables: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;

  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const app of running.splice(0)) await app.stop().catch(() => {});
    for (const queue of queues.splice(0)) await admin.deleteQueue(queue).catch(() => {});
    for (const exchange of exchanges.splice(0)) await admin.deleteExchange(exchange).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  const freshTable = (prefix: string) => {
    const table = unique(prefix).toLowerCase();
    tables.push(table);
    return table;
  };
  const freshQueue = async (prefix: string) => {
    const queue = unique(prefix);
    queues.push(queue);
    await admin.assertQueue(queue, { durable: true });
    return queue;
  };
  const freshExchange = async (prefix: string) => {
    const exchange = unique(prefix);
    exchanges.push(exchange);
    await admin.assertExchange(exchange, "topic", { durable: true });
    return exchange;
  };
  test("rows published in transactions reach the queues persistent, with their ids and headers; the inbox on the other side stores each once", async () => {
    const outboxTable = freshTable("amqp_outbox");
    const inboxTable = freshTable("amqp_inbox");
    const Outbox = outboxSpecOf(outboxTable, form);
    const Inbox = inboxSpecOf(inboxTable);
    await createInboxTable(db, Outbox);
    await createInboxTable(db, Inbox);
    const exchange = await freshExchange("orders");
    // Two queues bound to the exchange: one the inbox bridge consumes, one the test reads.
    const billing = await freshQueue("billing");
    const audit = await freshQueue("audit");
    await admin.bindQueue(billing, exchange, "orders.#");
    await admin.bindQueue(audit, exchange, "orders.#");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
      .lease(2000)
      .route(Outbox, "orders")
      .route(Inbox, "orders.in");
    const N = 60;
    // Six transactions of ten rows (the traceparent of each in its headers), and one rolled back, never relayed.
    await publishSixtyOrders(db, (order, options) => broker.publish("orders", order, options));

    const inbox = amqpInbox(broker, "orders.in", { connection, queue: billing, prefetch: 16, logger: silentLogger });
    await inbox.start();
    // Row n = 5 fails once, after rows of its batch were published: the batch goes again, and so do their messages.
    let failed = false;
    const relay = amqpOutbox(
      InboxQueue.of(Outbox, "orders")
        .batch(16)
        .workers(2)
        .pollInterval(50)
        .onError(() => HandlerOutcome.retry()),
      {
        connection,
        exchange,
        routingKey: (order) => {
          if (order.n === 5 && !failed) {
            failed = true;
            throw new Error("no routing key yet");
          }
          return `orders.${order.customer}`;
        },
      },
    );
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    running.push(app);
    try {
      await until(async () => (await rowsIn(db, outboxTable)) === 0, 20_000, "every outbox row acked");
      await until(async () => (await rowsIn(db, inboxTable)) === N && (await admin.checkQueue(billing)).messageCount === 0, 20_000, "every message stored");
    } finally {
      await inbox.stop();
      await app.stop();
    }
    expect(failed).toBe(true);
    const messages = await drainQueue(admin, audit);
    // RabbitMQ kept the resent messages: more messages than rows, each row's id among them.
    expect(messages.length).toBeGreaterThan(N);
    expect(new Set(messages.map((m) => m.properties.messageId as string)).size).toBe(N);
    for (const m of messages) {
      const order = JSON.parse(m.content.toString()) as Order;
      expect(m.properties.messageId).toMatch(new RegExp(`^${outboxTable}:\\d+$`));
      expect(m.properties.deliveryMode).toBe(2);
      expect(m.properties.contentType).toBe("application/json");
      expect(m.properties.headers).toEqual({ traceparent: traceparentOf(order.n) });
      expect(m.fields.routingKey).toBe(`orders.${order.customer}`);
    }
    // The inbox deduplicated on the message id: one row per outbox row, with its headers.
    expect(inbox.counts).toEqual({ stored: N, duplicates: messages.length - N });
    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(inboxTable)}`.execute(db);
    expect(new Set(rows.map((r) => r.message_id))).toEqual(new Set(messages.map((m) => m.properties.messageId as string)));
    const sentHeaders = new Map(messages.map((m) => [m.properties.messageId as string, m.properties.headers]));
    for (const r of rows) expect(typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers).toEqual(sentHeaders.get(r.message_id));
  });

  if (form !== "advisory")
    test("an order key keeps each key's messages in id order in the queue", async () => {
      const table = freshTable("amqp_ordered");
      const spec = orderedOutboxSpecOf(table, form);
      await createInboxTable(db, spec);
      const queue = await freshQueue("ordered");
      const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
        .lease(2000)
        .route(spec, "orders");
      const N = 90;
      const orders = Array.from({ length: N }, (_, n) => ({ n, customer: n % 4 }));
      await broker.publishMany("orders", orders, { columns: (o) => ({ customer: o.customer }) });
      // The default exchange: the routing key is the queue.
      const relay = amqpOutbox(InboxQueue.of(spec, "orders").batch(8).workers(4).pollInterval(50), { connection, routingKey: queue });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      running.push(app);
      await until(async () => (await rowsIn(db, table)) === 0, 30_000, "every ordered row acked");
      await app.stop();
      const bodies = (await drainQueue(admin, queue)).map((m) => JSON.parse(m.content.toString()) as Order);
      expect(bodies).toHaveLength(N);
      for (let c = 0; c < 4; c++) {
        expect(bodies.filter((o) => o.customer === c).map((o) => o.n)).toEqual(orders.filter((o) => o.customer === c).map((o) => o.n));
      }
    });

  test("a message no queue is bound for fails its batch: its row stays, attempted, until a queue is bound", async () => {
    const table = freshTable("amqp_unroutable");
    const spec = outboxSpecOf(table, form);
    await createInboxTable(db, spec);
    const exchange = await freshExchange("nowhere");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 10 } })
      .lease(2000)
      .route(spec, "orders");
    await broker.publishMany("orders", [
      { n: 1, customer: 1 },
      { n: 2, customer: 2 },
    ]);
    const errors: unknown[] = [];
    const relay = amqpOutbox(
      InboxQueue.of(spec, "orders")
        .batch(8)
        .pollInterval(50)
        .onError((error) => {
          errors.push(error);
          return HandlerOutcome.retry();
        }),
      { connection, exchange },
    );
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    running.push(app);
    try {
      await until(() => errors.length >= 2, 15_000, "the batch failed twice");
      expect(await rowsIn(db, table)).toBe(2);
      expect(String((errors[0] as Error).message)).toContain("RabbitMQ");
      const queue = await freshQueue("late");
      await admin.bindQueue(queue, exchange, "orders");
      await until(async () => (await rowsIn(db, table)) === 0, 15_000, "the rows relayed once a queue is bound");
      expect((await drainQueue(admin, queue)).map((m) => (JSON.parse(m.content.toString()) as Order).n).sort()).toEqual([1, 2]);
    } finally {
      await app.stop();
    }
  });
});
