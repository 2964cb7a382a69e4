/**
 * A RabbitMQ that stops under a running relay and bridge, on every engine (lease form), both made with a
 * `connection` function: while the broker is down the relay's sends fail, its rows back off and stay; once
 * it is back the relay and the bridge connect again by themselves, and every row reaches the inbox table
 * once. The broker is a RabbitMQ node this test starts on ports of its own (Debian's rabbitmq-server, run as
 * its `rabbitmq` user, in a temporary directory) and stops with `rabbitmqctl stop_app` / `start_app`, as an
 * operator restarting it would; the node is shut down at the end, and killed by its pid if it did not go.
 */
import { execFile, spawn } from "node:child_process";
import { chownSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, defaultOnError, silentLogger } from "@sqlinbox/runtime";
import amqp, { type ChannelModel } from "amqplib";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { engines, unique } from "../../runtime/test/support/engines.js";
import { until } from "../../runtime/test/support/claim-forms.js";
import { inboxSpecOf, outboxSpecOf } from "../../../test/support/bridge-tables.js";
import { relayThroughRestart } from "../../../test/support/bridge-restart.js";
import { amqpInbox, amqpOutbox } from "../src/index.js";

const run = promisify(execFile);
const port = 15_000 + Math.floor(Math.random() * 2000);
const node = `sqlinbox${port}@localhost`;
const url = `amqp://guest:guest@127.0.0.1:${port}`;
const dir = mkdtempSync(join(tmpdir(), "sqlinbox-rabbit-"));
let pid: number | undefined;

/** `rabbitmqctl` against this test's node. */
const ctl = (...args: string[]) => run("/usr/sbin/rabbitmqctl", ["-n", node, ...args], { timeout: 60_000 });

const reachable = async (): Promise<boolean> => {
  try {
    await (await amqp.connect(url)).close();
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  writeFileSync(join(dir, "rabbitmq.conf"), `listeners.tcp.local = 127.0.0.1:${port}\nloopback_users = none\n`);
  writeFileSync(join(dir, "enabled_plugins"), "[].\n");
  const { stdout } = await run("id", ["-u", "rabbitmq"]);
  const { stdout: group } = await run("id", ["-g", "rabbitmq"]);
  chownSync(dir, Number(stdout.trim()), Number(group.trim()));
  for (const file of ["rabbitmq.conf", "enabled_plugins"]) chownSync(join(dir, file), Number(stdout.trim()), Number(group.trim()));
  const output = openSync(join(dir, "server.out"), "w");
  const server = spawn("/usr/sbin/rabbitmq-server", [], {
    stdio: ["ignore", output, output],
    detached: true,
    env: {
      ...process.env,
      RABBITMQ_NODENAME: node,
      RABBITMQ_NODE_PORT: String(port),
      RABBITMQ_DIST_PORT: String(port + 20_000),
      RABBITMQ_CONFIG_FILE: join(dir, "rabbitmq.conf"),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, "enabled_plugins"),
      RABBITMQ_MNESIA_BASE: join(dir, "mnesia"),
      RABBITMQ_LOG_BASE: join(dir, "log"),
      RABBITMQ_FEATURE_FLAGS_FILE: join(dir, "feature_flags"),
      RABBITMQ_PID_FILE: join(dir, "pid"),
    },
  });
  server.unref();
  // Nine seconds on a quiet 2-core machine; far longer while the rest of the suite runs beside it.
  await until(reachable, 150_000, `the test's RabbitMQ node ${node}`).catch((error: Error) => {
    throw new Error(`${error.message}; its output ends:\n${readFileSync(join(dir, "server.out"), "utf8").slice(-2000)}`);
  });
  pid = Number(readFileSync(join(dir, "pid"), "utf8").trim());
}, 180_000);

afterAll(async () => {
  await ctl("stop").catch(() => {});
  if (pid !== undefined) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already: the stop above ended it
    }
  }
  rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe.each(engines)("$name × lease", (engine) => {
  test("stopped under a relay and a bridge made with a connection function: the sends fail and the rows stay; once it is back both reconnect and every row lands once", async () => {
    const admin: ChannelModel = await amqp.connect(url);
    admin.on("error", () => {});
    const channel = await admin.createChannel();
    const queue = unique("restart");
    await channel.assertQueue(queue, { durable: true });
    await admin.close();

    const dbUrl = engine.url();
    const db = await engine.connect(dbUrl);
    const outboxTable = unique("amqp_restart_out").toLowerCase();
    const inboxTable = unique("amqp_restart_in").toLowerCase();
    try {
      const Outbox = outboxSpecOf(outboxTable, "lease");
      const Inbox = inboxSpecOf(inboxTable);
      await createInboxTable(db, Outbox);
      await createInboxTable(db, Inbox);
      const broker = SqlBroker.fromUrl(dbUrl, { pool: { max: 8 } })
        .lease(2000)
        .route(Outbox, "orders")
        .route(Inbox, "orders.in");
      const connect = async () => amqp.connect(url);
      const errors: unknown[] = [];
      const backoff = defaultOnError({ baseMs: 200, factor: 2, capMs: 800 });
      const relay = amqpOutbox(
        InboxQueue.of(Outbox, "orders")
          .batch(8)
          .pollInterval(50)
          .onError((error, attempt, ctx) => {
            errors.push(error);
            return backoff(error, attempt, ctx);
          }),
        { connection: connect, routingKey: queue },
      );
      const inbox = amqpInbox(broker, "orders.in", { connection: connect, queue, prefetch: 16, retryDelayMs: 200, logger: silentLogger });
      await inbox.start();
      const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
      try {
        await relayThroughRestart(
          db,
          broker,
          { outbox: outboxTable, inbox: inboxTable },
          { stop: () => ctl("stop_app"), start: () => ctl("start_app"), failedSends: () => errors.length },
        );
      } finally {
        await app.stop();
        await relay.close();
        await inbox.stop();
      }
      const stored = await sql<{ message_id: string; payload: unknown }>`SELECT message_id, payload FROM ${sql.id(inboxTable)}`.execute(db);
      const ns = stored.rows.map(
        (r) => (JSON.parse(typeof r.payload === "object" && !Buffer.isBuffer(r.payload) ? JSON.stringify(r.payload) : String(r.payload)) as { n: number }).n,
      );
      expect(ns.sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, n) => n));
      expect(new Set(stored.rows.map((r) => r.message_id)).size).toBe(40);
      expect(inbox.counts.stored).toBe(40);
      console.log(`RabbitMQ stopped ${engine.name}: ${errors.length} failed sends while down, 40 rows → 40 inbox rows (${inbox.counts.duplicates} duplicates dropped)`);
    } finally {
      await engine.dropTable(db, outboxTable).catch(() => {});
      await engine.dropTable(db, inboxTable).catch(() => {});
      await db.destroy();
    }
  });
});

test("a relay given a connection of its own that closed says so, and how to have it reconnect", async () => {
  const engine = engines[0]!;
  const dbUrl = engine.url();
  const db = await engine.connect(dbUrl);
  const table = unique("amqp_closed").toLowerCase();
  try {
    const Outbox = outboxSpecOf(table, "lease");
    await createInboxTable(db, Outbox);
    const broker = SqlBroker.fromUrl(dbUrl).route(Outbox, "orders");
    const connection = await amqp.connect(url);
    connection.on("error", () => {});
    const errors: unknown[] = [];
    const relay = amqpOutbox(
      InboxQueue.of(Outbox, "orders")
        .pollInterval(50)
        .onError((error) => {
          errors.push(error);
          return HandlerOutcome.retryAfter(60_000);
        }),
      { connection, routingKey: "nowhere" },
    );
    await connection.close();
    const app = await new App({ name: "relay", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(relay)).start();
    try {
      await broker.publish("orders", { n: 1, customer: 0 });
      await until(() => errors.length > 0, 10_000, "the send failed");
    } finally {
      await app.stop();
    }
    expect(String(errors[0])).toContain("the RabbitMQ connection it was given is closed and cannot be reopened here; pass `connection: () => amqp.connect(url)`");
    expect(await sql<{ n: number }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db).then((r) => Number(r.rows[0]?.n))).toBe(1);
  } finally {
    await engine.dropTable(db, table).catch(() => {});
    await db.destroy();
  }
});
