/**
 * The JetStream inbox bridge on every engine: each message becomes exactly one row under its message
 * id (Nats-Msg-Id, else <stream>:<sequence>), with its headers, acked after the insert; a message stored
 * but never acked (the bridge died between the commit and the ack) comes back, finds its key taken and
 * is acked without a second row.
 */
import { AckPolicy, type JetStreamManager, jetstream } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { defineInbox, field } from "@sqlinbox/core";
import { SqlBroker, createInboxTable, isSqlInboxError, silentLogger } from "@sqlinbox/runtime";
import { inboxWriter } from "@sqlinbox/runtime/internal";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, inboxSpecOf } from "../../../test/support/bridge-tables.js";
import { natsInbox } from "../src/index.js";
import { connectNats, freshStream, jetstreamManager } from "./support/nats.js";

const encoder = new TextEncoder();
const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  nc = await connectNats();
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
});

describe.each(engines)("$name", (engine: TestEngine) => {
  const url = engine.url();
  const streams: string[] = [];
  const tables: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;
  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const stream of streams.splice(0)) await jsm.streams.delete(stream).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  test("each message becomes one row, a redelivery of a stored message none", async () => {
    const table = unique("nats_inbox").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const stream = await freshStream(jsm, "inbox");
    streams.push(stream);
    // A short ack wait: an unacked message comes back after a second.
    await jsm.consumers.add(stream, { durable_name: "shop", ack_policy: AckPolicy.Explicit, ack_wait: 1_000_000_000 });
    const js = jetstream(nc);
    const N = 40;
    for (let n = 0; n < N; n++) {
      const h = headers();
      h.set("traceparent", traceparent);
      // Every fourth message has no Nats-Msg-Id: its key is the stream sequence.
      const options = n % 4 === 3 ? { headers: h } : { headers: h, msgID: `order-${n}` };
      await js.publish(`${stream}.payments`, encoder.encode(JSON.stringify({ n, customer: n % 3 })), options);
    }
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");

    // The first message is stored by a bridge that dies before its ack: written, never acked.
    const consumer = await js.consumers.get(stream, "shop");
    const first = await consumer.next();
    expect(first).not.toBeNull();
    const write = inboxWriter(broker, "payments");
    expect((await write({ key: first?.headers?.get("Nats-Msg-Id") ?? "", payload: first?.json<Order>() as Order, headers: {} })).created).toBe(true);

    const inbox = natsInbox(broker, "payments", { js, stream, consumer: "shop", logger: silentLogger });
    await inbox.start();
    try {
      await until(
        async () => {
          const info = await jsm.consumers.info(stream, "shop");
          return info.num_pending === 0 && info.num_ack_pending === 0 && inbox.counts.stored === N - 1;
        },
        20_000,
        "every message stored and acked",
      );
    } finally {
      await inbox.stop();
      await broker.close();
    }
    // The first message came back (after the ack wait) and found its row: every other one stored once. On a loaded
    // machine a message whose insert and ack took longer than the 1 s ack wait comes back too, and finds its row.
    expect(inbox.counts.stored).toBe(N - 1);
    expect(inbox.counts.duplicates).toBeGreaterThanOrEqual(1);
    const { rows } = await sql<{ message_id: string; headers: unknown; payload: unknown }>`SELECT message_id, headers, payload FROM ${sql.id(table)} ORDER BY id`.execute(db);
    expect(rows).toHaveLength(N);
    const keys = rows.map((r) => r.message_id);
    expect(new Set(keys).size).toBe(N);
    const expected = Array.from({ length: N }, (_, n) => (n % 4 === 3 ? `${stream}:${n + 1}` : `order-${n}`));
    expect([...keys].sort()).toEqual([...expected].sort());
    for (const r of rows) {
      const h = typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers;
      if (r.message_id !== "order-0") expect(h).toMatchObject({ traceparent });
    }
  });

  test("a route without a dedup key column, or not declared, is refused when the bridge is made", () => {
    const table = unique("nats_nokey").toLowerCase();
    const NoKey = defineInbox({ table, columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
    const broker = SqlBroker.fromUrl(url).route(NoKey, "payments");
    const js = jetstream(nc);
    const refused = (() => {
      try {
        // @ts-expect-error the route's table has no dedup key column
        natsInbox(broker, "payments", { js, stream: "S", consumer: "c" });
      } catch (error) {
        return error;
      }
    })();
    expect(isSqlInboxError(refused, "Declaration")).toBe(true);
    expect((refused as Error).message).toContain(`(route "payments", table "${table}")`);
    const unknown = (() => {
      try {
        natsInbox(broker, "other" as string, { js, stream: "S", consumer: "c" });
      } catch (error) {
        return error;
      }
    })();
    expect(isSqlInboxError(unknown, "NoRoute")).toBe(true);
  });
});
