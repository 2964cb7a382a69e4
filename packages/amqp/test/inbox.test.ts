/**
 * The RabbitMQ inbox bridge on every engine: each message becomes exactly one row under its `message_id`,
 * acked after the insert; a message stored but never acked (its consumer's channel closed) is redelivered,
 * finds its key taken and is acked without a second row; a message without a message id, or one that
 * cannot be decoded, is rejected without a row.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { SqlBroker, createInboxTable, isSqlInboxError, silentLogger } from "@sqlinbox/runtime";
import { inboxWriter } from "@sqlinbox/runtime/internal";
import type { Channel, ChannelModel } from "amqplib";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, inboxSpecOf } from "../../../test/support/bridge-tables.js";
import { amqpInbox } from "../src/index.js";
import { connectAmqp } from "./support/amqp.js";

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let connection: ChannelModel;
let admin: Channel;
beforeAll(async () => {
  connection = await connectAmqp();
  admin = await connection.createChannel();
});
afterAll(async () => {
  await connection?.close().catch(() => {});
});

describe.each(engines)("$name", (engine: TestEngine) => {
  const url = engine.url();
  const tables: string[] = [];
  const queues: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;
  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const queue of queues.splice(0)) await admin.deleteQueue(queue).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  test("each message becomes one row; a message stored but never acked is redelivered and finds its key taken", async () => {
    const table = unique("amqp_inbox").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const queue = unique("payments");
    queues.push(queue);
    await admin.assertQueue(queue, { durable: true });
    const N = 40;
    for (let n = 0; n < N; n++)
      admin.sendToQueue(queue, Buffer.from(JSON.stringify({ n, customer: n % 3 })), { messageId: `payment-${n}`, persistent: true, headers: { traceparent, attempt: 3 } });
    // Two messages no row can come of: no message id, and a body that is not JSON.
    admin.sendToQueue(queue, Buffer.from(JSON.stringify({ n: -1, customer: 0 })));
    admin.sendToQueue(queue, Buffer.from("not json"), { messageId: "payment-bad" });
    await until(async () => (await admin.checkQueue(queue)).messageCount === N + 2, 10_000, "the messages queued");

    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const write = inboxWriter(broker, "payments");
    // A consumer stores the first two messages and its channel closes before it acks them: RabbitMQ redelivers both.
    const dying = await connection.createChannel();
    for (let i = 0; i < 2; i++) {
      const message = await dying.get(queue, { noAck: false });
      if (message === false) throw new Error("no message to take");
      expect((await write({ key: message.properties.messageId as string, payload: JSON.parse(message.content.toString()) as Order, headers: {} })).created).toBe(true);
    }
    await dying.close();

    const inbox = amqpInbox(broker, "payments", { connection, queue, prefetch: 8, logger: silentLogger });
    await inbox.start();
    try {
      await until(async () => (await admin.checkQueue(queue)).messageCount === 0 && inbox.counts.stored + inbox.counts.duplicates === N, 20_000, "every message stored and acked");
    } finally {
      await inbox.stop();
      await broker.close();
    }
    expect(inbox.counts).toEqual({ stored: N - 2, duplicates: 2 });
    // Nothing left unacked: the channel closed at stop gave back nothing.
    expect((await admin.checkQueue(queue)).messageCount).toBe(0);
    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(table)} ORDER BY id`.execute(db);
    expect(rows.map((r) => r.message_id).sort()).toEqual(Array.from({ length: N }, (_, n) => `payment-${n}`).sort());
    // String headers are kept (a number header is not a string: dropped).
    for (const r of rows.slice(2)) expect(typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers).toEqual({ traceparent });
    // Delivery order is insert order.
    expect(rows.slice(2).map((r) => r.message_id)).toEqual(Array.from({ length: N - 2 }, (_, n) => `payment-${n + 2}`));
  });

  test("messages stored together keep their own headers and delivery order; one the table refuses is given back alone", async () => {
    const table = unique("amqp_batch").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const queue = unique("batch");
    queues.push(queue);
    await admin.assertQueue(queue, { durable: true });
    const N = 30;
    const parent = (n: number) => `00-${String(n).padStart(32, "0")}-00f067aa0ba902b7-01`;
    // Keys in the reverse of delivery order; n = 13 decodes to a payload JSON cannot hold.
    for (let n = 0; n < N; n++)
      admin.sendToQueue(queue, Buffer.from(JSON.stringify({ n, customer: 1 })), { messageId: `batch-${100 - n}`, persistent: true, headers: { traceparent: parent(n) } });
    await until(async () => (await admin.checkQueue(queue)).messageCount === N, 10_000, "the messages queued");
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (_fields: unknown, message: string) => void warnings.push(message) };
    const decode = (content: Buffer) => {
      const order = JSON.parse(content.toString("utf8")) as Order;
      return order.n === 13 ? { ...order, customer: 13n as unknown as number } : order;
    };
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const inbox = amqpInbox(broker, "payments", { connection, queue, prefetch: 16, retryDelayMs: 50, logger, decode });
    await inbox.start();
    try {
      await until(() => inbox.counts.stored === N - 1 && warnings.includes("inbox bridge: insert failed, message given back"), 20_000, "every message but n = 13 stored");
    } finally {
      await inbox.stop();
      await broker.close();
    }
    expect(inbox.counts).toEqual({ stored: N - 1, duplicates: 0 });
    // The refused message went back to the queue, alone.
    expect((await admin.checkQueue(queue)).messageCount).toBe(1);
    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(table)} ORDER BY id`.execute(db);
    const delivered = Array.from({ length: N }, (_, n) => n).filter((n) => n !== 13);
    expect(rows.map((r) => r.message_id)).toEqual(delivered.map((n) => `batch-${100 - n}`));
    for (const [i, r] of rows.entries()) expect(typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers).toEqual({ traceparent: parent(delivered[i] as number) });
  });

  test("an insert that fails is not acked: the message is requeued and stored once the table exists", async () => {
    const table = unique("amqp_late").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    const queue = unique("late");
    queues.push(queue);
    await admin.assertQueue(queue, { durable: true });
    admin.sendToQueue(queue, Buffer.from(JSON.stringify({ n: 1, customer: 1 })), { messageId: "late-1", persistent: true });
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const failures: unknown[] = [];
    const logger = { ...silentLogger, warn: (fields: unknown) => void failures.push(fields) };
    const inbox = amqpInbox(broker, "payments", { connection, queue, retryDelayMs: 100, logger: logger as typeof silentLogger });
    await inbox.start();
    try {
      // No table yet: the insert fails, and the message is given back rather than acked.
      await until(() => failures.length >= 2, 10_000, "two failed inserts");
      expect(inbox.counts).toEqual({ stored: 0, duplicates: 0 });
      await createInboxTable(db, spec);
      await until(() => inbox.counts.stored === 1, 10_000, "the message stored");
    } finally {
      await inbox.stop();
      await broker.close();
    }
    expect((await admin.checkQueue(queue)).messageCount).toBe(0);
    const { rows } = await sql<{ message_id: string }>`SELECT message_id FROM ${sql.id(table)}`.execute(db);
    expect(rows.map((r) => r.message_id)).toEqual(["late-1"]);
  });

  test("a consumer the broker cancels (its queue deleted) is logged, and start() consumes the queue made again", async () => {
    const table = unique("amqp_cancel").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const queue = unique("cancel");
    queues.push(queue);
    await admin.assertQueue(queue, { durable: true });
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const errors: string[] = [];
    const logger = { ...silentLogger, error: (_fields: unknown, message: string) => void errors.push(message) };
    const inbox = amqpInbox(broker, "payments", { connection, queue, logger: logger as typeof silentLogger });
    await inbox.start();
    try {
      admin.sendToQueue(queue, Buffer.from(JSON.stringify({ n: 1, customer: 1 })), { messageId: "cancel-1" });
      await until(() => inbox.counts.stored === 1, 10_000, "the first message stored");
      await admin.deleteQueue(queue);
      await until(() => errors.some((m) => m.includes("cancelled the consumer")), 10_000, "the cancel logged");
      await admin.assertQueue(queue, { durable: true });
      admin.sendToQueue(queue, Buffer.from(JSON.stringify({ n: 2, customer: 2 })), { messageId: "cancel-2" });
      await inbox.start();
      await until(() => inbox.counts.stored === 2, 10_000, "the second message stored after start()");
    } finally {
      await inbox.stop();
      await broker.close();
    }
  });

  test("start rejects for a queue that does not exist; a route without a dedup key column, or not declared, is refused when the bridge is made", async () => {
    const table = unique("amqp_nokey").toLowerCase();
    const NoKey = defineInbox({ table, columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
    const broker = SqlBroker.fromUrl(url)
      .route(NoKey, "payments")
      .route(inboxSpecOf(`${table}_in`), "in");
    const attempt = (route: string) => {
      try {
        amqpInbox(broker, route, { connection, queue: "q" });
      } catch (error) {
        return error;
      }
    };
    const refused = attempt("payments");
    expect(isSqlInboxError(refused, "Declaration")).toBe(true);
    expect((refused as Error).message).toContain(`(route "payments", table "${table}")`);
    expect(isSqlInboxError(attempt("other"), "NoRoute")).toBe(true);
    expect(() => amqpInbox(broker, "in", { connection, queue: "q", prefetch: 0 })).toThrow(/prefetch must be a positive integer, got 0 \(route "in"\)/);
    await expect(amqpInbox(broker, "in", { connection, queue: unique("missing"), logger: silentLogger }).start()).rejects.toThrow(/NOT_FOUND/);
    await broker.close();
  });
});
