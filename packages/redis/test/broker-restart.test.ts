/**
 * A Redis killed under a running relay and inbox bridge, on every engine (lease form): while it is down the
 * relay's `XADD`s fail and its rows stay, backing off; once it is back (same port, same append-only file) ioredis
 * reconnects both, and every row lands in the inbox table once. The server is one this test starts on a port of
 * its own (`appendfsync always`, so an entry Redis confirmed survives the kill) and kills by its pid.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, InboxQueue, SqlBroker, createInboxTable, defaultOnError, silentLogger } from "@sqlinbox/runtime";
import { Redis } from "ioredis";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { inboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { relayThroughRestart } from "../../../test/support/bridge-restart.js";
import { redisInbox, redisOutbox } from "../src/index.js";
import { streamEntries } from "./support/redis.js";

const port = 17_000 + Math.floor(Math.random() * 2000);
const dir = mkdtempSync(join(tmpdir(), "sqlinbox-redis-"));
let server: ChildProcess | undefined;

const client = () => new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1, retryStrategy: () => 100, lazyConnect: true });

/** Starts this test's own redis-server (append-only, fsync per write) and resolves once it answers. */
async function startServer(): Promise<void> {
  server = spawn("/usr/bin/redis-server", ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always"], {
    stdio: "ignore",
  });
  await until(
    async () => {
      const probe = new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === "PONG";
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    },
    10_000,
    "the test's redis-server",
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
  rmSync(dir, { recursive: true, force: true });
});

describe.each(engines)("$name × lease", (engine) => {
  test("killed under a relay and a bridge: the sends fail and the rows stay; once it is back both go on and every row lands once", async () => {
    await startServer();
    const relayRedis = client();
    const inboxRedis = client();
    const admin = client();
    for (const r of [relayRedis, inboxRedis, admin]) r.on("error", () => {});
    await Promise.all([relayRedis.connect(), inboxRedis.connect(), admin.connect()]);
    const stream = unique("restart");
    const dbUrl = engine.url();
    const db = await engine.connect(dbUrl);
    const outboxTable = unique("redis_restart_out").toLowerCase();
    const inboxTable = unique("redis_restart_in").toLowerCase();
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
      const relay = redisOutbox(
        InboxQueue.of(Outbox, "orders")
          .batch(8)
          .pollInterval(50)
          .onError((error, attempt, ctx) => {
            errors.push(error);
            return backoff(error, attempt, ctx);
          }),
        { redis: relayRedis, stream },
      );
      // Entries read and not acked when the server died are taken over after a second.
      const inbox = redisInbox(broker, "orders.in", { redis: inboxRedis, stream, group: "billing", consumer: "billing-1", blockMs: 100, claimIdleMs: 1000, logger: silentLogger });
      await inbox.start();
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await relayThroughRestart(
          db,
          broker,
          { outbox: outboxTable, inbox: inboxTable },
          { stop: () => killServer(), start: () => startServer(), failedSends: () => errors.length },
        );
      } finally {
        await app.stop();
        await inbox.stop();
      }
      const stored = await sql<{ message_id: string }>`SELECT message_id FROM ${sql.id(inboxTable)}`.execute(db);
      expect(new Set(stored.rows.map((r) => r.message_id)).size).toBe(40);
      const entries = await streamEntries(admin, stream);
      expect(new Set(entries.map((e) => e.fields.id)).size).toBe(40);
      console.log(`Redis killed ${engine.name}: ${errors.length} failed sends while down, ${entries.length} entries, 40 inbox rows (${inbox.counts.duplicates} duplicates)`);
    } finally {
      relayRedis.disconnect();
      inboxRedis.disconnect();
      admin.disconnect();
      await killServer();
      await engine.dropTable(db, outboxTable).catch(() => {});
      await engine.dropTable(db, inboxTable).catch(() => {});
      await db.destroy();
    }
  });
});
