/**
 * The MQTT inbox bridge on every engine: each message becomes exactly one row under its `sqlinbox-id` user
 * property, PUBACKed after the insert; a message a session's client stored and never acked (it went away) is
 * sent again by the broker to the next connection of the session, finds its key taken and is acked without a
 * second row; messages published while the bridge was stopped wait in its session; a message without an id, or
 * one that cannot be decoded, is acked without a row.
 */
import { randomUUID } from "node:crypto";
import { defineInbox, field } from "@sqlinbox/core";
import { SqlBroker, createInboxTable, isSqlInboxError, silentLogger } from "@sqlinbox/runtime";
import { inboxWriter } from "@sqlinbox/runtime/internal";
import { sql } from "kysely";
import type { MqttClient } from "mqtt";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestEngine, engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { type Order, inboxSpecOf } from "../../../test/support/bridge-tables.js";
import { mqttInbox } from "../src/index.js";
import { MQTT_URL, connectMqtt, dropSession } from "./support/mqtt.js";

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let publisher: MqttClient;
beforeAll(async () => {
  publisher = await connectMqtt();
});
afterAll(async () => {
  await publisher?.endAsync();
});

describe.each(engines)("$name", (engine: TestEngine) => {
  const url = engine.url();
  const tables: string[] = [];
  const sessions: string[] = [];
  let db: Awaited<ReturnType<TestEngine["connect"]>>;
  beforeAll(async () => {
    db = await engine.connect(url);
  });
  afterAll(async () => {
    for (const session of sessions.splice(0)) await dropSession(session).catch(() => {});
    for (const table of tables.splice(0)) await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  });

  test("each message becomes one row; a message stored but never acked comes back to the session and finds its key taken", async () => {
    const table = unique("mqtt_inbox").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    await createInboxTable(db, spec);
    const topic = `sqlinbox-test/${randomUUID()}`;
    const clientId = unique("shop");
    sessions.push(clientId);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const write = inboxWriter(broker, "payments");
    const publish = async (from: number, to: number) => {
      for (let n = from; n < to; n++)
        await publisher.publishAsync(topic, JSON.stringify({ n, customer: n % 3 }), { qos: 1, properties: { userProperties: { "sqlinbox-id": `payment-${n}`, traceparent } } });
    };

    // A client of the session stores the first message and goes away before its PUBACK: the broker keeps it unacked.
    const dying = await connectMqtt({ clientId, clean: false, properties: { sessionExpiryInterval: 300 } });
    let storedByDying = 0;
    dying.handleMessage = (packet, _done) => {
      if (storedByDying++ > 0) return;
      const key = packet.properties?.userProperties?.["sqlinbox-id"] as string;
      void write({ key, payload: JSON.parse(packet.payload.toString()) as Order, headers: {} });
    };
    await dying.subscribeAsync(topic, { qos: 1 });
    await publish(0, 10);
    await until(
      async () => storedByDying > 0 && Number((await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db)).rows[0]?.n) === 1,
      10_000,
      "the first message stored",
    );
    await dying.endAsync(true);

    // Published while no client of the session is connected: the broker queues them for the session.
    await publish(10, 20);
    // Two messages no row can come of: no id, and a body that is not JSON.
    await publisher.publishAsync(topic, JSON.stringify({ n: -1, customer: 0 }), { qos: 1 });
    await publisher.publishAsync(topic, "not json", { qos: 1, properties: { userProperties: { "sqlinbox-id": "payment-bad" } } });

    const inbox = mqttInbox(broker, "payments", { url: MQTT_URL, clientId, topic, logger: silentLogger });
    await inbox.start();
    try {
      await publish(20, 30);
      await until(() => inbox.counts.stored + inbox.counts.duplicates === 30, 20_000, "every message stored");
    } finally {
      await inbox.stop();
    }
    expect(inbox.counts).toEqual({ stored: 29, duplicates: 1 });

    // Everything was PUBACKed: the session, connected again, gets nothing more.
    const again = mqttInbox(broker, "payments", { url: MQTT_URL, clientId, topic, logger: silentLogger });
    await again.start();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await again.stop();
    await broker.close();
    expect(again.counts).toEqual({ stored: 0, duplicates: 0 });

    const { rows } = await sql<{ message_id: string; headers: unknown }>`SELECT message_id, headers FROM ${sql.id(table)} ORDER BY id`.execute(db);
    expect(rows.map((r) => r.message_id)).toEqual(Array.from({ length: 30 }, (_, n) => `payment-${n}`));
    for (const r of rows.slice(1)) expect(typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers).toEqual({ traceparent });
  });

  test("an insert that fails holds the PUBACK: a bridge stopped meanwhile leaves the message in the session, stored at the next start", async () => {
    const table = unique("mqtt_late").toLowerCase();
    tables.push(table);
    const spec = inboxSpecOf(table);
    const topic = `sqlinbox-test/${randomUUID()}`;
    const clientId = unique("late");
    sessions.push(clientId);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "payments");
    const failures: unknown[] = [];
    const logger = { ...silentLogger, warn: (fields: unknown) => void failures.push(fields) };
    const first = mqttInbox(broker, "payments", { url: MQTT_URL, clientId, topic, retryDelayMs: 100, logger: logger as typeof silentLogger });
    await first.start();
    await publisher.publishAsync(topic, JSON.stringify({ n: 1, customer: 1 }), { qos: 1, properties: { userProperties: { "sqlinbox-id": "late-1" } } });
    // No table yet: the insert fails again and again, the PUBACK waits.
    await until(() => failures.length >= 2, 10_000, "two failed inserts");
    await first.stop();
    expect(first.counts).toEqual({ stored: 0, duplicates: 0 });
    await createInboxTable(db, spec);
    const second = mqttInbox(broker, "payments", { url: MQTT_URL, clientId, topic, logger: silentLogger });
    await second.start();
    try {
      await until(() => second.counts.stored === 1, 10_000, "the message stored from the session");
    } finally {
      await second.stop();
      await broker.close();
    }
    const { rows } = await sql<{ message_id: string }>`SELECT message_id FROM ${sql.id(table)}`.execute(db);
    expect(rows.map((r) => r.message_id)).toEqual(["late-1"]);
  });

  test("a route without a dedup key column, or not declared, or an empty client id, is refused when the bridge is made", () => {
    const table = unique("mqtt_nokey").toLowerCase();
    const NoKey = defineInbox({ table, columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
    const broker = SqlBroker.fromUrl(url)
      .route(NoKey, "payments")
      .route(inboxSpecOf(`${table}_in`), "in");
    const attempt = (route: string) => {
      try {
        mqttInbox(broker, route, { url: MQTT_URL, clientId: "c", topic: "t" });
      } catch (error) {
        return error;
      }
    };
    const refused = attempt("payments");
    expect(isSqlInboxError(refused, "Declaration")).toBe(true);
    expect((refused as Error).message).toContain(`(route "payments", table "${table}")`);
    expect(isSqlInboxError(attempt("other"), "NoRoute")).toBe(true);
    expect(() => mqttInbox(broker, "in", { url: MQTT_URL, clientId: "", topic: "t" })).toThrow(/mqttInbox \(route "in"\): clientId is empty/);
  });
});
