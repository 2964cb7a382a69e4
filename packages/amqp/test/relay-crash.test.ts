/**
 * A RabbitMQ outbox relay process killed with SIGKILL after the broker confirmed a batch and before its rows were
 * acked, on every engine × form: another relay publishes those rows again (RabbitMQ keeps both copies), and an
 * amqpInbox stores one row per outbox row; the outbox table ends empty.
 */
import { fileURLToPath } from "node:url";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import type { Channel, ChannelModel } from "amqplib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { startFixture, until } from "../../runtime/test/support/claim-forms.js";
import { formsOn, inboxSpecOf, outboxSpecOf, rowsIn } from "../../../test/support/bridge-tables.js";
import { amqpInbox, amqpOutbox } from "../src/index.js";
import { connectAmqp } from "./support/amqp.js";

const LEASE_MS = 2000;
const N = 64;
const worker = fileURLToPath(new URL("./support/fixtures/relay-worker.ts", import.meta.url));
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

describe.each(matrix)("$engine.name × $form", ({ engine, form }) => {
  test("a relay killed between the broker's confirms and the row acks: the rows go again, the inbox stores each once", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const outboxTable = unique("amqp_crash").toLowerCase();
    const inboxTable = unique("amqp_crash_in").toLowerCase();
    const queue = unique("crash");
    try {
      const Outbox = outboxSpecOf(outboxTable, form);
      const Inbox = inboxSpecOf(inboxTable);
      await createInboxTable(db, Outbox);
      await createInboxTable(db, Inbox);
      await admin.assertQueue(queue, { durable: true });
      const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } })
        .lease(LEASE_MS)
        .route(Outbox, "orders")
        .route(Inbox, "orders.in");
      await broker.publishMany(
        "orders",
        Array.from({ length: N }, (_, n) => ({ n, customer: n % 3 })),
      );
      const child = startFixture(worker, {
        RELAY_URL: url,
        RELAY_TABLE: outboxTable,
        RELAY_FORM: form,
        RELAY_QUEUE: queue,
        RELAY_HOLD_MS: "400",
        RELAY_LEASE_MS: String(LEASE_MS),
      });
      await child.waitFor((l) => (l as unknown as { published?: number }).published === 16, 30_000, "the second batch confirmed");
      child.child.kill("SIGKILL");
      await child.exited;

      // The queue holds the confirmed messages; the second batch's rows are still in the table.
      const queued = (await admin.checkQueue(queue)).messageCount;
      const left = await rowsIn(db, outboxTable);
      expect(queued).toBe(16);
      expect(left).toBe(N - 8);

      const inbox = amqpInbox(broker, "orders.in", { connection, queue, logger: silentLogger });
      await inbox.start();
      const relay = amqpOutbox(InboxQueue.of(Outbox, "orders").batch(8).pollInterval(50), { connection, routingKey: queue });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await until(async () => (await rowsIn(db, outboxTable)) === 0, LEASE_MS + 20_000, "every row relayed");
        await until(async () => inbox.counts.stored + inbox.counts.duplicates === N + 8 && (await admin.checkQueue(queue)).messageCount === 0, 20_000, "every message read");
      } finally {
        await app.stop();
        await inbox.stop();
      }
      // The 8 rows confirmed but not acked at the kill went twice; the inbox stored each row once.
      expect(inbox.counts).toEqual({ stored: N, duplicates: 8 });
      expect(await rowsIn(db, inboxTable)).toBe(N);
      console.log(`amqp relay SIGKILL ${engine.name} × ${form}: 8 rows confirmed but not acked at the kill; ${N + 8} messages, ${N} inbox rows`);
      await broker.close();
    } finally {
      await admin.deleteQueue(queue).catch(() => {});
      await engine.dropTable(db, outboxTable).catch(() => {});
      await engine.dropTable(db, inboxTable).catch(() => {});
      await db.destroy();
    }
  });
});
