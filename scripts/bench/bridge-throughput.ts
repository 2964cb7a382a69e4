/**
 * The inbox bridges' throughput: N messages waiting on the broker, then a bridge started in this process
 * stores them into an inbox table (each under its message id as the dedup key, acked after the commit), timed
 * from its start to the N-th row. Medians of `--rounds`. Not part of `npm test`.
 *
 *   npx tsx --conditions=@sqlinbox/source scripts/bench/bridge-throughput.ts [--brokers=redis,nats,amqp] [--n=5000] [--rounds=3] [--engine=postgres|mariadb|sqlite]
 */
import { loadavg } from "node:os";
import { defineInbox, field } from "@sqlinbox/core";
import { SqlBroker, createInboxTable, silentLogger } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { connect, urlOf } from "./db.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const N = Number(flag("n") ?? 5_000);
const ROUNDS = Number(flag("rounds") ?? 3);
const ENGINE = (flag("engine") ?? "postgres") as EngineName;
const brokers = (flag("brokers") ?? "redis,nats,amqp").split(",");
const TABLE = "bench_bridge_inbox";
const Inbox = defineInbox({
  table: TABLE,
  columns: {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    key: field.key("message_id"),
    headers: field.headers(),
    payload: field.payload<{ n: number; body: string }>(),
  },
});
const BODY = "x".repeat(100);
const traceparent = (n: number) => `00-${n.toString(16).padStart(32, "0")}-00f067aa0ba902b7-01`;

const db = connect(ENGINE, 2);
const rowCount = async () => Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(TABLE)}`.execute(db)).rows[0]?.n);
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** One broker: fills its source with N messages (untimed), then runs a bridge into `broker` until stopped. */
interface Source {
  fill(tag: string): Promise<void>;
  bridge(broker: SqlBroker, tag: string): Promise<{ stop(): Promise<void> }>;
  close(): Promise<void>;
}

async function redisSource(): Promise<Source> {
  const { Redis } = await import("ioredis");
  const { redisInbox } = await import("@sqlinbox/redis");
  const redis = new Redis(process.env.SQLINBOX_REDIS_URL ?? "redis://127.0.0.1:6379");
  const reader = redis.duplicate();
  return {
    async fill(tag) {
      await redis.call("XGROUP", ["CREATE", `bench:${tag}`, "g", "$", "MKSTREAM"]);
      for (let at = 0; at < N; at += 1000) {
        const pipe = redis.pipeline();
        for (let n = at; n < Math.min(N, at + 1000); n++)
          pipe.call("XADD", `bench:${tag}`, "*", "id", `m-${n}`, "payload", JSON.stringify({ n, body: BODY }), "headers", JSON.stringify({ traceparent: traceparent(n) }));
        await pipe.exec();
      }
    },
    async bridge(broker, tag) {
      const inbox = redisInbox(broker.route(Inbox, "in"), "in", { redis: reader, stream: `bench:${tag}`, group: "g", consumer: "c1", logger: silentLogger, blockMs: 200 });
      await inbox.start();
      return {
        stop: async () => {
          await inbox.stop();
          await redis.del(`bench:${tag}`);
        },
      };
    },
    async close() {
      reader.disconnect();
      redis.disconnect();
    },
  };
}

async function natsSource(): Promise<Source> {
  const { AckPolicy, jetstream, jetstreamManager } = await import("@nats-io/jetstream");
  const { connect: connectNats } = await import("@nats-io/transport-node");
  const { natsInbox } = await import("@sqlinbox/nats");
  const nc = await connectNats({ servers: process.env.SQLINBOX_NATS_URL ?? "127.0.0.1:4222" });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const { headers: natsHeaders } = await import("@nats-io/transport-node");
  return {
    async fill(tag) {
      const stream = `BRIDGE_${tag}`;
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
      await jsm.consumers.add(stream, { durable_name: "shop", ack_policy: AckPolicy.Explicit });
      const inFlight: Promise<unknown>[] = [];
      for (let n = 0; n < N; n++) {
        const h = natsHeaders();
        h.set("traceparent", traceparent(n));
        inFlight.push(js.publish(`${stream}.in`, JSON.stringify({ n, body: BODY }), { msgID: `m-${n}`, headers: h }));
        if (inFlight.length >= 1000) await Promise.all(inFlight.splice(0));
      }
      await Promise.all(inFlight);
    },
    async bridge(broker, tag) {
      const stream = `BRIDGE_${tag}`;
      const inbox = natsInbox(broker.route(Inbox, "in"), "in", { js, stream, consumer: "shop", logger: silentLogger });
      await inbox.start();
      return {
        stop: async () => {
          await inbox.stop();
          await jsm.streams.delete(stream).catch(() => undefined);
        },
      };
    },
    close: () => nc.close(),
  };
}

async function amqpSource(): Promise<Source> {
  const amqp = await import("amqplib");
  const { amqpInbox } = await import("@sqlinbox/amqp");
  const url = process.env.SQLINBOX_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
  const connection = await amqp.connect(url);
  const channel = await connection.createConfirmChannel();
  return {
    async fill(tag) {
      const queue = `bridge_${tag}`;
      await channel.assertQueue(queue, { durable: true });
      for (let n = 0; n < N; n++) {
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ n, body: BODY })), { persistent: true, messageId: `m-${n}`, headers: { traceparent: traceparent(n) } });
        if (n % 1000 === 999) await channel.waitForConfirms();
      }
      await channel.waitForConfirms();
    },
    async bridge(broker, tag) {
      const queue = `bridge_${tag}`;
      const inbox = amqpInbox(broker.route(Inbox, "in"), "in", { connection: () => amqp.connect(url), queue, logger: silentLogger });
      await inbox.start();
      return {
        stop: async () => {
          await inbox.stop();
          await channel.deleteQueue(queue).catch(() => undefined);
        },
      };
    },
    close: () => connection.close(),
  };
}

const sources: Record<string, () => Promise<Source>> = { redis: redisSource, nats: natsSource, amqp: amqpSource };

console.log(`bridge throughput: ${ENGINE} inbox, N ${N}, ${ROUNDS} rounds, load ${loadavg()[0]?.toFixed(1)}`);
for (const name of brokers) {
  const make = sources[name];
  if (make === undefined) throw new Error(`--brokers: no ${name} (have ${Object.keys(sources).join(", ")})`);
  const source = await make();
  const rates: number[] = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const tag = `${name}_${round}_${Date.now() % 100_000}`;
      await sql.raw(`drop table if exists ${TABLE}`).execute(db);
      await createInboxTable(db, Inbox);
      await source.fill(tag);
      const broker = SqlBroker.fromUrl(urlOf(ENGINE), { pool: { max: 4 } });
      const started = performance.now();
      const running = await source.bridge(broker, tag);
      await until(async () => (await rowCount()) >= N, 600_000, `${N} rows`);
      const ms = performance.now() - started;
      await running.stop();
      await broker.close();
      if ((await rowCount()) !== N) throw new Error(`${await rowCount()} rows for ${N} messages`);
      rates.push((N * 1000) / ms);
      console.log(`  ${name} round ${round}: ${((N * 1000) / ms).toFixed(0)} msg/s`);
    }
  } finally {
    await source.close();
  }
  console.log(`${name}: median ${[...rates].sort((a, b) => a - b)[Math.floor(rates.length / 2)]?.toFixed(0)} msg/s`);
}
await sql.raw(`drop table if exists ${TABLE}`).execute(db);
await db.destroy();
