/**
 * A JetStream server that goes down under a running relay, on every engine (lease form): the sends fail, the
 * rows stay and back off under the queue's onError policy, and once the server is back (same port, same
 * store) they go, each once. The server is one this test starts on a port of its own and kills by its pid.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { App, InboxQueue, SqlBroker, createInboxTable, defaultOnError, silentLogger } from "@sqlinbox/runtime";
import { afterAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { outboxSpecOf, rowsIn } from "../../../test/support/bridge-tables.js";
import { natsOutbox } from "../src/index.js";
import { connectNats, jetstreamManager, streamMessages } from "./support/nats.js";

const port = 14_000 + Math.floor(Math.random() * 2000);
const store = mkdtempSync(join(tmpdir(), "sqlinbox-nats-"));
let server: ChildProcess | undefined;

/** Starts this test's own nats-server (JetStream, file store) and resolves once it takes connections. */
async function startServer(): Promise<void> {
  server = spawn("/usr/sbin/nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store], { stdio: "ignore" });
  await until(
    async () => {
      try {
        await (await connectNats(`127.0.0.1:${port}`)).close();
        return true;
      } catch {
        return false;
      }
    },
    10_000,
    "the test's nats-server",
  );
}

async function killServer(): Promise<void> {
  const child = server;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

afterAll(async () => {
  await killServer();
  rmSync(store, { recursive: true, force: true });
});

describe.each(engines)("$name × lease", (engine) => {
  test("sends fail while the server is down, the rows back off and stay, and go once each when it is back", async () => {
    await startServer();
    const nc = await connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const jsm = await jetstreamManager(nc);
    const stream = `restart_${randomUUID().slice(0, 8)}`;
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique("nats_restart").toLowerCase();
    const left = () => rowsIn(db, table);
    try {
      const spec = outboxSpecOf(table, "lease");
      await createInboxTable(db, spec);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
        .lease(2000)
        .route(spec, "orders");
      const errors: unknown[] = [];
      const backoff = defaultOnError({ baseMs: 200, factor: 2, capMs: 800 });
      const relay = natsOutbox(
        InboxQueue.of(spec, "orders")
          .batch(8)
          .pollInterval(50)
          .onError((error, attempt, ctx) => {
            errors.push(error);
            return backoff(error, attempt, ctx);
          }),
        { js: jetstream(nc), subject: `${stream}.orders`, ackTimeoutMs: 500 },
      );
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await broker.publishMany(
          "orders",
          Array.from({ length: 20 }, (_, n) => ({ n, customer: 0 })),
        );
        await until(async () => (await left()) === 0, 20_000, "the first rows relayed");

        await killServer();
        await broker.publishMany(
          "orders",
          Array.from({ length: 20 }, (_, n) => ({ n: 20 + n, customer: 0 })),
        );
        await until(() => errors.length >= 3, 20_000, "three failed sends");
        expect(await left()).toBe(20);
        expect(String(errors[0])).toContain("JetStream did not confirm");

        await startServer();
        await until(async () => (await left()) === 0, 30_000, "the rows relayed once the server is back");
      } finally {
        await app.stop();
      }
      const messages = await streamMessages(jsm, stream);
      expect(messages.map((m) => (m.body as { n: number }).n).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, n) => n));
      expect(new Set(messages.map((m) => m.msgId)).size).toBe(40);
      console.log(`NATS down ${engine.name}: ${errors.length} failed sends while down, 40 rows → 40 messages`);
    } finally {
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close();
      await killServer();
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
