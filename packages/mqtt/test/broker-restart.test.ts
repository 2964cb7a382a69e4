/**
 * A Mosquitto restarted under a running relay and inbox bridge, on every engine (lease form): while it is down
 * the relay's publishes are not acknowledged, its rows stay and back off; once it is back (same port, same
 * persistence file) MQTT.js reconnects both, the bridge's persistent session resumes, and every row lands in the
 * inbox table once. The broker is one this test starts on a port of its own and stops with SIGTERM by its pid
 * (Mosquitto writes its sessions and queued messages to the persistence file when it stops, not per message:
 * a SIGKILL loses what it held, as Mosquitto documents).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, InboxQueue, SqlBroker, createInboxTable, defaultOnError, silentLogger } from "@sqlinbox/runtime";
import { sql } from "kysely";
import mqtt from "mqtt";
import { afterAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { inboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { relayThroughRestart } from "../../../test/support/bridge-restart.js";
import { mqttInbox, mqttOutbox } from "../src/index.js";

const port = 19_000 + Math.floor(Math.random() * 2000);
const url = `mqtt://127.0.0.1:${port}`;
const dir = mkdtempSync(join(tmpdir(), "sqlinbox-mosquitto-"));
const config = join(dir, "mosquitto.conf");
// `user root`: started as root, Mosquitto drops to its own user, which cannot write its persistence file into this
// root-owned temporary directory (it logs "Error saving in-memory database" and keeps no session across the restart).
writeFileSync(config, `listener ${port} 127.0.0.1\nuser root\nallow_anonymous true\npersistence true\npersistence_location ${dir}/\n`);
let server: ChildProcess | undefined;

async function startServer(): Promise<void> {
  server = spawn("/usr/sbin/mosquitto", ["-c", config], { stdio: "ignore" });
  await until(
    async () => {
      try {
        await (await mqtt.connectAsync(url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 1000 })).endAsync();
        return true;
      } catch {
        return false;
      }
    },
    10_000,
    "the test's mosquitto",
  );
}

async function stopServer(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const child = server;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await exited;
}

afterAll(async () => {
  await stopServer("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe.each(engines)("$name × lease", (engine) => {
  test("restarted under a relay and a bridge: the publishes fail and the rows stay; once it is back both reconnect and every row lands once", async () => {
    await startServer();
    const client = await mqtt.connectAsync(url, { protocolVersion: 5, reconnectPeriod: 200 });
    client.on("error", () => {});
    const topic = `restart/${unique("t")}`;
    const dbUrl = engine.url();
    const db = await engine.connect(dbUrl);
    const outboxTable = unique("mqtt_restart_out").toLowerCase();
    const inboxTable = unique("mqtt_restart_in").toLowerCase();
    try {
      const Outbox = outboxSpecOf(outboxTable, "lease");
      const Inbox = inboxSpecOf(inboxTable);
      await createInboxTable(db, Outbox);
      await createInboxTable(db, Inbox);
      const broker = SqlBroker.fromUrl(dbUrl, { pool: { max: 8 } })
        .lease(2000)
        .route(Outbox, "orders")
        .route(Inbox, "orders.in");
      const errors: unknown[] = [];
      const backoff = defaultOnError({ baseMs: 200, factor: 2, capMs: 800 });
      const relay = mqttOutbox(
        InboxQueue.of(Outbox, "orders")
          .batch(8)
          .pollInterval(50)
          .onError((error, attempt, ctx) => {
            errors.push(error);
            return backoff(error, attempt, ctx);
          }),
        { client, topic, ackTimeoutMs: 500 },
      );
      const inbox = mqttInbox(broker, "orders.in", { url, clientId: unique("bridge"), topic, retryDelayMs: 200, connectOptions: { reconnectPeriod: 200 }, logger: silentLogger });
      await inbox.start();
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await relayThroughRestart(
          db,
          broker,
          { outbox: outboxTable, inbox: inboxTable },
          { stop: () => stopServer(), start: () => startServer(), failedSends: () => errors.length },
        );
      } finally {
        await app.stop();
        await inbox.stop();
      }
      const stored = await sql<{ message_id: string }>`SELECT message_id FROM ${sql.id(inboxTable)}`.execute(db);
      expect(new Set(stored.rows.map((r) => r.message_id)).size).toBe(40);
      console.log(`Mosquitto restarted ${engine.name}: ${errors.length} failed sends while down, 40 inbox rows (${inbox.counts.duplicates} duplicates)`);
    } finally {
      await client.endAsync(true).catch(() => {});
      await stopServer("SIGKILL");
      await engine.dropTable(db, outboxTable).catch(() => {});
      await engine.dropTable(db, inboxTable).catch(() => {});
      await db.destroy();
    }
  });
});
