/**
 * The store every batching inbox bridge shares (Redis, JetStream, RabbitMQ), on every engine: a batch goes in
 * one write; a batch the table refuses is stored message by message, so the message refused is the only one given
 * back and the others are returned to be acked; a key a row already holds counts as a duplicate, never a second row.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { inboxSpecOf } from "../../../../test/support/bridge-tables.js";
import { InboxStore } from "../../src/bridge/inbox-store.js";
import { type InboxWrite, inboxWriter } from "../../src/bridge/inbox-writer.js";
import { createInboxTable, SqlBroker, silentLogger } from "../../src/index.js";
import { engines, type TestEngine, unique } from "../support/engines.js";

describe.each(engines)("$name", (engine: TestEngine) => {
  const url = engine.url();
  const tables: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;
  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  async function storeOn() {
    const table = unique("inbox_store").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 2 }, logger: silentLogger }).route(spec, "payments");
    const writes: number[] = [];
    const write = inboxWriter(broker, "payments") as InboxWrite<unknown>;
    const counted = Object.assign(
      (message: Parameters<typeof write>[0]) => {
        writes.push(1);
        return write(message);
      },
      {
        many: (messages: Parameters<typeof write.many>[0]) => {
          writes.push(messages.length);
          return write.many(messages);
        },
      },
    );
    const refused: Array<{ item: number; key: string; error: unknown }> = [];
    const store = new InboxStore<number>(counted, silentLogger, { table }, (item, key, error) => void refused.push({ item, key, error }));
    const rows = async () => (await db.selectFrom(table).select(["message_id"]).orderBy("id").execute()).map((row: { message_id: string }) => row.message_id);
    return { broker, store, writes, refused, rows };
  }

  const message = (n: number, payload: unknown = { n, customer: n % 3 }) => ({ item: n, inbound: { key: `order-${n}`, payload, headers: {} } });

  test("a batch goes in one write; a key already held counts as a duplicate and is returned to ack", async () => {
    const { broker, store, writes, refused, rows } = await storeOn();
    try {
      expect((await store.store([message(0)])).map((m) => m.item)).toEqual([0]);
      const acked = await store.store([message(1), message(0), message(2), message(3)]);
      expect(acked.map((m) => m.item)).toEqual([1, 0, 2, 3]);
      expect(writes).toEqual([1, 4]);
      expect(store.counts).toEqual({ stored: 4, duplicates: 1 });
      expect(refused).toEqual([]);
      expect(await rows()).toEqual(["order-0", "order-1", "order-2", "order-3"]);
      expect(await store.store([])).toEqual([]);
      expect(writes).toEqual([1, 4]);
    } finally {
      await broker.close();
    }
  });

  test("a batch the table refuses is stored one by one: only the refused message is given back", async () => {
    const { broker, store, writes, refused, rows } = await storeOn();
    try {
      // n = 2's payload holds a BigInt, which JSON cannot encode: its insert fails, alone or in the batch.
      const acked = await store.store([message(0), message(1), message(2, { n: 2n }), message(3)]);
      expect(acked.map((m) => m.item)).toEqual([0, 1, 3]);
      expect(writes).toEqual([4, 1, 1, 1, 1]);
      expect(refused.map(({ item, key }) => ({ item, key }))).toEqual([{ item: 2, key: "order-2" }]);
      expect(String(refused[0]?.error)).toMatch(/BigInt/);
      expect(store.counts).toEqual({ stored: 3, duplicates: 0 });
      expect(await rows()).toEqual(["order-0", "order-1", "order-3"]);
      // Given back and delivered again with a payload that encodes, it is stored then.
      expect((await store.store([message(2), message(1)])).map((m) => m.item)).toEqual([2, 1]);
      expect(store.counts).toEqual({ stored: 4, duplicates: 1 });
    } finally {
      await broker.close();
    }
  });

  test("a message refused alone is given back, and refused is awaited before the next message is stored", async () => {
    const { broker, refused, rows } = await storeOn();
    try {
      const order: string[] = [];
      const write = inboxWriter(broker, "payments") as InboxWrite<unknown>;
      const slow = new InboxStore<number>(write, silentLogger, {}, async (item) => {
        order.push(`refused ${item} start`);
        await new Promise((resolve) => setTimeout(resolve, 30));
        order.push(`refused ${item} end`);
      });
      const failing = Object.assign(
        (m: Parameters<typeof write>[0]) => {
          order.push(`write ${m.key}`);
          return write(m);
        },
        { many: () => Promise.reject(new Error("the batch failed")) },
      );
      const paced = new InboxStore<number>(failing, silentLogger, {}, async (item) => {
        order.push(`refused ${item}`);
        await new Promise((resolve) => setTimeout(resolve, 30));
      });
      expect(await slow.store([message(5, { n: 5n })])).toEqual([]);
      expect(order).toEqual(["refused 5 start", "refused 5 end"]);
      order.length = 0;
      expect((await paced.store([message(6, { n: 6n }), message(7)])).map((m) => m.item)).toEqual([7]);
      expect(order).toEqual(["write order-6", "refused 6", "write order-7"]);
      expect(refused).toEqual([]);
      expect(await rows()).toEqual(["order-7"]);
    } finally {
      await broker.close();
    }
  });
});
