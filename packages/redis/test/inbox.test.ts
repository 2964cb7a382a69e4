/**
 * The Redis inbox bridge on every engine: each entry becomes exactly one row under its `id` field (else
 * <stream>:<entry id>), acked (XACK) after the insert; an entry stored but never acked comes back (to its own
 * consumer at start, to another through XAUTOCLAIM once idle), finds its key taken and is acked without a second row.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { SqlBroker, createInboxTable, isSqlInboxError, silentLogger } from "@sqlinbox/runtime";
import { inboxWriter } from "@sqlinbox/runtime/internal";
import type { Redis } from "ioredis";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, inboxSpecOf } from "../../../test/support/bridge-tables.js";
import { redisInbox } from "../src/index.js";
import { connectRedis } from "./support/redis.js";

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
type Entries = Array<[string, string[]]>;

let redis: Redis;
beforeAll(async () => {
  redis = await connectRedis();
});
afterAll(() => {
  redis?.disconnect();
});

describe.each(engines)("$name", (engine: TestEngine) => {
  const url = engine.url();
  const tables: string[] = [];
  const streams: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;
  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const stream of streams.splice(0)) await redis.del(stream).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  test("each entry becomes one row; entries stored but never acked come back and find their key taken", async () => {
    const table = unique("redis_inbox").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const stream = unique("payments");
    streams.push(stream);
    await redis.call("XGROUP", ["CREATE", stream, "shop", "$", "MKSTREAM"]);
    const N = 40;
    for (let n = 0; n < N; n++) {
      // Every fourth entry has no id field: its key is the entry id.
      const id = n % 4 === 3 ? [] : ["id", `order-${n}`];
      await redis.call("XADD", [stream, "*", ...id, "payload", JSON.stringify({ n, customer: n % 3 }), "headers", JSON.stringify({ traceparent })]);
    }
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const write = inboxWriter(broker, "payments");
    // Two consumers store one entry each and die before XACK: "dead" never comes back, "shop-1" restarts.
    const storeUnacked = async (consumer: string) => {
      const reply = (await redis.call("XREADGROUP", ["GROUP", "shop", consumer, "COUNT", 1, "STREAMS", stream, ">"])) as Array<[string, Entries]>;
      const [, fields] = (reply[0] as [string, Entries])[1][0] as [string, string[]];
      const key = fields[fields.indexOf("id") + 1] as string;
      const payload = JSON.parse(fields[fields.indexOf("payload") + 1] as string) as Order;
      expect((await write({ key, payload, headers: {} })).created).toBe(true);
    };
    await storeUnacked("dead");
    await storeUnacked("shop-1");

    const inbox = redisInbox(broker, "payments", { redis: redis.duplicate(), stream, group: "shop", consumer: "shop-1", blockMs: 100, claimIdleMs: 300, logger: silentLogger });
    await inbox.start();
    try {
      await until(
        async () => {
          const pending = (await redis.call("XPENDING", [stream, "shop"])) as [number, ...unknown[]];
          return pending[0] === 0 && inbox.counts.stored === N - 2;
        },
        20_000,
        "every entry stored and acked",
      );
    } finally {
      await inbox.stop();
      await broker.close();
    }
    // The two unacked entries were claimed and found their rows; every other one stored once. On a loaded machine an
    // entry of the inbox's own whose insert and ack took longer than claimIdleMs is claimed again too, and finds its row.
    expect(inbox.counts.stored).toBe(N - 2);
    expect(inbox.counts.duplicates).toBeGreaterThanOrEqual(2);
    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(table)} ORDER BY id`.execute(db);
    expect(rows).toHaveLength(N);
    const entryIds = ((await redis.call("XRANGE", [stream, "-", "+"])) as Entries).map(([entryId]) => entryId);
    const expected = Array.from({ length: N }, (_, n) => (n % 4 === 3 ? `${stream}:${entryIds[n]}` : `order-${n}`));
    expect(rows.map((r) => r.message_id).sort()).toEqual([...expected].sort());
    for (const r of rows.slice(2)) expect(typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers).toEqual({ traceparent });
  });

  test("one read is stored in one write: each entry keeps its own headers, held keys are acked as duplicates, and an entry the table refuses stays pending alone", async () => {
    const table = unique("redis_batch").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const stream = unique("batch");
    streams.push(stream);
    await redis.call("XGROUP", ["CREATE", stream, "shop", "$", "MKSTREAM"]);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    // order-0 is stored before the bridge starts; order-1 comes twice in the same read; n = 7 decodes to a payload JSON cannot hold.
    expect((await inboxWriter(broker, "payments")({ key: "order-0", payload: { n: 0, customer: 0 }, headers: {} })).created).toBe(true);
    const N = 12;
    const parent = (n: number) => `00-${String(n).padStart(32, "0")}-00f067aa0ba902b7-01`;
    for (const n of [...Array.from({ length: N }, (_, n) => n), 1])
      await redis.call("XADD", [stream, "*", "id", `order-${n}`, "payload", JSON.stringify({ n, customer: n % 3 }), "headers", JSON.stringify({ traceparent: parent(n) })]);
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (_fields: unknown, message: string) => void warnings.push(message) };
    const decode = (payload: string) => {
      const order = JSON.parse(payload) as Order;
      return order.n === 7 ? { ...order, customer: 7n as unknown as number } : order;
    };
    const inbox = redisInbox(broker, "payments", { redis: redis.duplicate(), stream, group: "shop", consumer: "c1", blockMs: 100, logger, decode });
    await inbox.start();
    try {
      await until(
        async () => {
          const pending = (await redis.call("XPENDING", [stream, "shop"])) as [number, ...unknown[]];
          return pending[0] === 1 && inbox.counts.stored + inbox.counts.duplicates === N;
        },
        20_000,
        "every entry but n = 7 stored and acked",
      );
    } finally {
      await inbox.stop();
      await broker.close();
    }
    // The read of 13 entries went as one write; it failed on n = 7, and each entry was then stored alone.
    expect(warnings).toEqual(["inbox bridge: a batch insert failed, storing its messages one by one", "inbox bridge: insert failed, entry left pending"]);
    expect(inbox.counts).toEqual({ stored: N - 2, duplicates: 2 });
    const pending = (await redis.call("XPENDING", [stream, "shop", "-", "+", 10])) as Array<[string, ...unknown[]]>;
    const entries = (await redis.call("XRANGE", [stream, "-", "+"])) as Entries;
    expect(pending.map(([entryId]) => entryId)).toEqual([entries[7]?.[0]]);
    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(table)} ORDER BY id`.execute(db);
    expect(rows.map((r) => r.message_id).sort()).toEqual(
      Array.from({ length: N }, (_, n) => `order-${n}`)
        .filter((k) => k !== "order-7")
        .sort(),
    );
    const headersOf = (r: { headers: unknown }) => (typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers);
    for (const r of rows.filter((r) => r.message_id !== "order-0")) expect(headersOf(r)).toEqual({ traceparent: parent(Number(r.message_id.slice(6))) });

    // A write that goes through as one batch: every entry of the read in one insert, no warning, the rows' ids in
    // the stream's order (here the reverse of the keys' order).
    const stream2 = unique("batch");
    streams.push(stream2);
    await redis.call("XGROUP", ["CREATE", stream2, "shop", "$", "MKSTREAM"]);
    for (let n = 129; n >= 100; n--)
      await redis.call("XADD", [stream2, "*", "id", `order-${n}`, "payload", JSON.stringify({ n, customer: 1 }), "headers", JSON.stringify({ traceparent: parent(n) })]);
    const broker2 = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const second = redisInbox(broker2, "payments", { redis: redis.duplicate(), stream: stream2, group: "shop", consumer: "c1", blockMs: 100, logger });
    warnings.length = 0;
    await second.start();
    try {
      await until(async () => second.counts.stored === 30, 20_000, "30 entries stored");
    } finally {
      await second.stop();
      await broker2.close();
    }
    expect(warnings).toEqual([]);
    const stored = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(table)} WHERE message_id LIKE 'order-1__' ORDER BY id`.execute(db);
    expect(stored.rows.map((r) => r.message_id)).toEqual(Array.from({ length: 30 }, (_, i) => `order-${129 - i}`));
    for (const r of stored.rows) expect(headersOf(r)).toEqual({ traceparent: parent(Number(r.message_id.slice(6))) });
  });

  // MySQL/MariaDB insert each keyed row alone (no INSERT … RETURNING): a batch's rows still commit together, so a row
  // the server refuses mid-batch (a key longer than its varchar(255) column) leaves none of the rows before it behind.
  // On Postgres and SQLite a batch is one multi-row statement, which commits whole or not at all by itself.
  test.runIf(engine.name === "mariadb")("a batch's rows commit together: a row refused mid-batch writes none before it, and each is then stored once", async () => {
    const table = unique("redis_atomic").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const stream = unique("atomic");
    streams.push(stream);
    await redis.call("XGROUP", ["CREATE", stream, "shop", "$", "MKSTREAM"]);
    const N = 10;
    const keyOf = (n: number) => (n === 5 ? `order-${"x".repeat(300)}` : `order-${n}`);
    for (let n = 0; n < N; n++) await redis.call("XADD", [stream, "*", "id", keyOf(n), "payload", JSON.stringify({ n, customer: 1 })]);
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (_fields: unknown, message: string) => void warnings.push(message) };
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const inbox = redisInbox(broker, "payments", { redis: redis.duplicate(), stream, group: "shop", consumer: "c1", blockMs: 100, logger });
    await inbox.start();
    try {
      await until(async () => inbox.counts.stored === N - 1, 20_000, "every entry but the long key stored");
    } finally {
      await inbox.stop();
      await broker.close();
    }
    expect(warnings).toEqual(["inbox bridge: a batch insert failed, storing its messages one by one", "inbox bridge: insert failed, entry left pending"]);
    // Rows 0–4 of the failed batch were rolled back with it: stored afterwards as new rows, none found held.
    expect(inbox.counts).toEqual({ stored: N - 1, duplicates: 0 });
    const { rows } = await sql<{ message_id: string }>`SELECT message_id FROM ${sql.id(table)} ORDER BY id`.execute(db);
    expect(rows.map((r) => r.message_id)).toEqual(
      Array.from({ length: N }, (_, n) => n)
        .filter((n) => n !== 5)
        .map(keyOf),
    );
  });

  test("a route without a dedup key column, or not declared, is refused when the bridge is made", () => {
    const table = unique("redis_nokey").toLowerCase();
    const NoKey = defineInbox({ table, columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
    const broker = SqlBroker.fromUrl(url).route(NoKey, "payments");
    const attempt = (route: string) => {
      try {
        redisInbox(broker, route, { redis, stream: "s", group: "g", consumer: "c" });
      } catch (error) {
        return error;
      }
    };
    const refused = attempt("payments");
    expect(isSqlInboxError(refused, "Declaration")).toBe(true);
    expect((refused as Error).message).toContain(`(route "payments", table "${table}")`);
    expect(isSqlInboxError(attempt("other"), "NoRoute")).toBe(true);
  });
});
