/**
 * The JetStream outbox relay on every engine × form: rows published in the application's transactions
 * reach the stream once each (a batch sent again after a failure is dropped by the duplicate window),
 * with their headers; an order key keeps each key's order on the stream; a stream that refuses the
 * publish leaves the rows for the retry policy; the table ends empty.
 */
import { type JetStreamManager, jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { App, HandlerOutcome, InboxQueue, type RunningApp, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, formsOn, publishSixtyOrders, rowsIn, traceparentOf, orderedOutboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { natsOutbox } from "../src/index.js";
import { connectNats, freshStream, jetstreamManager, streamMessages } from "./support/nats.js";

const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  nc = await connectNats();
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
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
    for (const stream of streams.splice(0)) await jsm.streams.delete(stream).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  async function freshOutbox() {
    const table = unique("nats_outbox").toLowerCase();
    tables.push(table);
    const spec = outboxSpecOf(table, form);
    await createInboxTable(db, spec);
    const stream = await freshStream(jsm, "outbox");
    streams.push(stream);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
      .lease(2000)
      .route(spec, `${stream}.orders`);
    return { table, spec, stream, broker, route: `${stream}.orders` as const };
  }

  test("rows published in transactions reach the stream once each, with their headers; a batch sent again is deduplicated", async () => {
    const { table, spec, stream, broker, route } = await freshOutbox();
    const N = 60;
    // Six transactions of ten rows (the traceparent of each in its headers), and one rolled back, never relayed.
    await publishSixtyOrders(db, (order, options) => broker.publish(route, order, options));

    // The subject of row n = 5 fails once, after rows of its batch were published: the batch is sent again.
    let failed = false;
    const relay = natsOutbox(
      InboxQueue.of(spec, route)
        .batch(16)
        .workers(2)
        .pollInterval(50)
        .onError(() => HandlerOutcome.retry()),
      {
        js: jetstream(nc),
        subject: (order, message) => {
          if (order.n === 5 && !failed) {
            failed = true;
            throw new Error(`no subject yet for ${message.id}`);
          }
          return `${stream}.orders.${order.customer}`;
        },
      },
    );
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    running.push(app);
    await until(async () => (await rowsIn(db, table)) === 0, 20_000, "every outbox row acked");
    await app.stop();

    expect(failed).toBe(true);
    const messages = await streamMessages(jsm, stream);
    // Zero duplicates: one message per row, although the failed batch's first rows were published twice.
    expect(messages).toHaveLength(N);
    const bodies = messages.map((m) => m.body as Order);
    expect(bodies.map((o) => o.n).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(new Set(messages.map((m) => m.msgId)).size).toBe(N);
    for (const m of messages) {
      const o = m.body as Order;
      expect(m.msgId).toMatch(new RegExp(`^${table}:\\d+$`));
      expect(m.headers, JSON.stringify(m)).toMatchObject({ traceparent: traceparentOf(o.n) });
      expect(m.subject).toBe(`${stream}.orders.${o.customer}`);
    }
  });

  test("a publish JetStream refuses (no stream for the subject) leaves the rows to the retry policy, then they go", async () => {
    const { table, spec, stream, broker, route } = await freshOutbox();
    await broker.publishMany(
      route,
      [0, 1, 2].map((n) => ({ n, customer: 0 })),
    );
    let subject = `nowhere_${stream}.orders`;
    const errors: unknown[] = [];
    const relay = natsOutbox(
      InboxQueue.of(spec, route)
        .batch(8)
        .pollInterval(50)
        .onError((error) => {
          errors.push(error);
          return HandlerOutcome.retry();
        }),
      { js: jetstream(nc), subject: () => subject, ackTimeoutMs: 1000 },
    );
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    running.push(app);
    await until(() => errors.length >= 2, 20_000, "two failed sends");
    expect(await rowsIn(db, table)).toBe(3);
    expect(String(errors[0])).toMatch(/^SqlInboxError: Handler: JetStream did not confirm 3 of 3 messages \(row ids \d+, \d+, \d+\): .+; the rows stay in the table/);
    subject = `${stream}.orders`;
    await until(async () => (await rowsIn(db, table)) === 0, 20_000, "the rows sent once the subject has a stream");
    await app.stop();
    expect((await streamMessages(jsm, stream)).map((m) => (m.body as Order).n)).toEqual([0, 1, 2]);
  });

  if (form !== "advisory")
    test("an order key keeps each key's messages in id order on the stream", async () => {
      const table = unique("nats_ordered").toLowerCase();
      tables.push(table);
      const spec = orderedOutboxSpecOf(table, form);
      await createInboxTable(db, spec);
      const stream = await freshStream(jsm, "ordered");
      streams.push(stream);
      const route = `${stream}.orders`;
      const broker = SqlBroker.fromUrl(url, { pool: { max: 40 } })
        .lease(2000)
        .route(spec, route);
      const N = 90;
      const orders = Array.from({ length: N }, (_, n) => ({ n, customer: n % 4 }));
      await broker.publishMany(route, orders, { columns: (o) => ({ customer: o.customer }) });
      // Some sends fail at random: a retried row is still its key's head, so order holds through retries.
      let sends = 0;
      const relay = natsOutbox(
        InboxQueue.of(spec, route)
          .batch(8)
          .workers(4)
          .pollInterval(50)
          .onError(() => HandlerOutcome.retry()),
        {
          js: jetstream(nc),
          subject: (o) => {
            if (++sends % 17 === 0) throw new Error("a failed send");
            return `${route}.${o.customer}`;
          },
        },
      );
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      running.push(app);
      await until(async () => (await rowsIn(db, table)) === 0, 30_000, "every ordered row acked");
      await app.stop();
      const bodies = (await streamMessages(jsm, stream)).map((m) => m.body as Order);
      expect(bodies).toHaveLength(N);
      for (let c = 0; c < 4; c++) {
        const sequence = bodies.filter((o) => o.customer === c).map((o) => o.n);
        expect(sequence).toEqual(orders.filter((o) => o.customer === c).map((o) => o.n));
      }
    });
});
