/**
 * An MQTT outbox relay process killed with SIGKILL after the broker acknowledged a batch (PUBACK) and before
 * its rows were acked, on every engine × form: another relay publishes those rows again (subscribers get both
 * copies), and an mqttInbox stores one row per outbox row; the outbox table ends empty.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import { sql } from "kysely";
import type { MqttClient } from "mqtt";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { startFixture, until } from "../../runtime/test/support/claim-forms.js";
import { formsOn, inboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { mqttInbox, mqttOutbox } from "../src/index.js";
import { MQTT_URL, connectMqtt, dropSession, recorder } from "./support/mqtt.js";

const LEASE_MS = 2000;
const N = 64;
const worker = fileURLToPath(new URL("./support/fixtures/relay-worker.ts", import.meta.url));
const matrix = engines.flatMap((engine) => formsOn(engine.name).map((form) => ({ engine, form })));

let client: MqttClient;
beforeAll(async () => {
  client = await connectMqtt();
});
afterAll(async () => {
  await client?.endAsync();
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }) => {
  test("a relay killed between the PUBACKs and the row acks: the rows go again, the inbox stores each once", async () => {
    const url = engine.url();
    const db = await engine.connect(url);
    const outboxTable = unique("mqtt_crash").toLowerCase();
    const inboxTable = unique("mqtt_crash_in").toLowerCase();
    const topic = `sqlinbox-test/${randomUUID()}`;
    const clientId = unique("crash");
    const count = async (table: string) => Number((await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db)).rows[0]?.n);
    const seen = await recorder(topic);
    try {
      const Outbox = outboxSpecOf(outboxTable, form);
      const Inbox = inboxSpecOf(inboxTable);
      await createInboxTable(db, Outbox);
      await createInboxTable(db, Inbox);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } })
        .lease(LEASE_MS)
        .route(Outbox, "orders")
        .route(Inbox, "orders.in");
      const inbox = mqttInbox(broker, "orders.in", { url: MQTT_URL, clientId, topic, logger: silentLogger });
      await inbox.start();
      await broker.publishMany(
        "orders",
        Array.from({ length: N }, (_, n) => ({ n, customer: n % 3 })),
      );
      const child = startFixture(worker, {
        RELAY_URL: url,
        RELAY_TABLE: outboxTable,
        RELAY_FORM: form,
        RELAY_TOPIC: topic,
        RELAY_HOLD_MS: "400",
        RELAY_LEASE_MS: String(LEASE_MS),
      });
      await child.waitFor((l) => (l as unknown as { acknowledged?: number }).acknowledged === 16, 30_000, "the second batch acknowledged");
      child.child.kill("SIGKILL");
      await child.exited;
      expect(await count(outboxTable)).toBe(N - 8);

      const relay = mqttOutbox(InboxQueue.of(Outbox, "orders").batch(8).pollInterval(50), { client, topic });
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await until(async () => (await count(outboxTable)) === 0, LEASE_MS + 20_000, "every row relayed");
        await until(() => inbox.counts.stored + inbox.counts.duplicates === N + 8 && seen.received.length === N + 8, 20_000, "every message read");
      } finally {
        await app.stop();
        await inbox.stop();
      }
      // The 8 rows acknowledged but not acked at the kill went twice; the inbox stored each row once.
      expect(new Set(seen.received.map((m) => m.userProperties["sqlinbox-id"])).size).toBe(N);
      expect(inbox.counts).toEqual({ stored: N, duplicates: 8 });
      expect(await count(inboxTable)).toBe(N);
      console.log(`mqtt relay SIGKILL ${engine.name} × ${form}: 8 rows acknowledged but not acked at the kill; ${seen.received.length} messages, ${N} inbox rows`);
      await broker.close();
    } finally {
      await seen.close();
      await dropSession(clientId).catch(() => {});
      await engine.dropTable(db, outboxTable).catch(() => {});
      await engine.dropTable(db, inboxTable).catch(() => {});
      await db.destroy();
    }
  });
});
