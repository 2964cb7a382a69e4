/**
 * The Redis outbox relay on every engine × form: rows published in the application's transactions reach
 * the stream, each with its row id and headers; a batch sent again adds its entries again (Redis does not
 * deduplicate), and a redisInbox on the other side stores each row once; an order key keeps each key's
 * order on the stream; the outbox table ends empty.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { App, HandlerOutcome, InboxQueue, type RunningApp, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import type { Redis } from "ioredis";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, formsOn, publishSixtyOrders, rowsIn, traceparentOf, inboxSpecOf, orderedOutboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { redisInbox, redisOutbox } from "../src/index.js";
import { connectRedis, streamEntries } from "./support/redis.js";

const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let redis: Redis;
beforeAll(async () => {
  redis = await connectRedis();
});
afterAll(() => {
  redis?.disconnect();
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }: { engine: TestEngine; form: ClaimForm }) => {
  const url = engine.url();
  const running: RunningApp[] = [];
  const streams: string[] = [];
  const tables: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;

  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const app of running.splice(0)) await app.stop().catch(() => {});
    for (const stream of streams.splice(0)) await redis.del(stream).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  const freshTable = (prefix: string) => {
    const table = unique(prefix).toLowerCase();
    tables.push(table);
    return table;
  };
  const freshStream = (prefix: string) => {
    const stream = unique(prefix);
    streams.push(stream);
    return stream;
  };
  test("rows published in transactions reach the stream with their ids and headers; the inbox on the other side stores each once", async () => {
    const outboxTable = freshTable("redis_outbox");
    const inboxTable = freshTable("redis_inbox");
    const Outbox = outboxSpecOf(outboxTable, form);
    const Inbox = inboxSpecOf(inboxTable);
    await createInboxTable(db, Outbox);
    await createInboxTable(db, Inbox);
    const stream = freshStream("orders");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
      .lease(2000)
      .route(Outbox, "orders")
      .route(Inbox, "orders.in");
    const N = 60;
    // Six transactions of ten rows (the traceparent of each in its headers), and one rolled back, never relayed.
    await publishSixtyOrders(db, (order, options) => broker.publish("orders", order, options));

    // The group exists before the relay adds anything, so the inbox reads every entry.
    const inbox = redisInbox(broker, "orders.in", { redis: redis.duplicate(), stream, group: "billing", consumer: "billing-1", blockMs: 100, logger: silentLogger });
    await inbox.start();
    // Row n = 5's XADD fails once (its key holds a string: WRONGTYPE), while the other rows of its batch were added:
    // the batch goes again, and so do their entries.
    const wrongType = `${stream}:not-a-stream`;
    await redis.set(wrongType, "text");
    streams.push(wrongType);
    let failed = false;
    const relay = redisOutbox(
      InboxQueue.of(Outbox, "orders")
        .batch(16)
        .workers(2)
        .pollInterval(50)
        .onError(() => HandlerOutcome.retry()),
      {
        redis,
        stream: (order) => {
          if (order.n === 5 && !failed) {
            failed = true;
            return wrongType;
          }
          return stream;
        },
      },
    );
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    running.push(app);
    try {
      await until(async () => (await rowsIn(db, outboxTable)) === 0, 20_000, "every outbox row acked");
      await until(
        async () => (await rowsIn(db, inboxTable)) === N && inbox.counts.stored + inbox.counts.duplicates === (await streamEntries(redis, stream)).length,
        20_000,
        "every entry stored",
      );
    } finally {
      await inbox.stop();
      await app.stop();
    }
    expect(failed).toBe(true);
    const entries = await streamEntries(redis, stream);
    // Redis kept the resent entries: more entries than rows, each row's id among them.
    expect(entries.length).toBeGreaterThan(N);
    expect(new Set(entries.map((e) => e.fields["id"])).size).toBe(N);
    for (const e of entries) {
      const order = JSON.parse(e.fields["payload"] ?? "") as Order;
      expect(e.fields["id"]).toMatch(new RegExp(`^${outboxTable}:\\d+$`));
      expect(JSON.parse(e.fields["headers"] ?? "")).toEqual({ traceparent: traceparentOf(order.n) });
    }
    // The inbox deduplicated on the id: one row per outbox row.
    expect(inbox.counts).toEqual({ stored: N, duplicates: entries.length - N });
    const { rows } = await sql<{ message_id: string; payload: unknown }>`SELECT message_id, payload FROM ${sql.id(inboxTable)}`.execute(db);
    expect(new Set(rows.map((r) => r.message_id))).toEqual(new Set(entries.map((e) => e.fields["id"])));
    const pending = (await redis.call("XPENDING", [stream, "billing"])) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
  });

  if (form !== "advisory")
    test("an order key keeps each key's entries in id order on the stream", async () => {
      const table = freshTable("redis_ordered");
      const spec = orderedOutboxSpecOf(table, form);
      await createInboxTable(db, spec);
      const stream = freshStream("ordered");
      const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
        .lease(2000)
        .route(spec, "orders");
      const N = 90;
      const orders = Array.from({ length: N }, (_, n) => ({ n, customer: n % 4 }));
      await broker.publishMany("orders", orders, { columns: (o) => ({ customer: o.customer }) });
      const relay = redisOutbox(InboxQueue.of(spec, "orders").batch(8).workers(4).pollInterval(50), { redis, stream });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      running.push(app);
      await until(async () => (await rowsIn(db, table)) === 0, 30_000, "every ordered row acked");
      await app.stop();
      const bodies = (await streamEntries(redis, stream)).map((e) => JSON.parse(e.fields["payload"] ?? "") as Order);
      expect(bodies).toHaveLength(N);
      for (let c = 0; c < 4; c++) {
        expect(bodies.filter((o) => o.customer === c).map((o) => o.n)).toEqual(orders.filter((o) => o.customer === c).map((o) => o.n));
      }
    });
});
