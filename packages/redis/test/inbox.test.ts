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
