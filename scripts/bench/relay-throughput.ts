/**
 * The outbox relays' throughput against each broker client's own publish loop. Per broker: the raw loop
 * publishes N messages the way that client does best (many in flight, then their confirms), and the relay
 * drains N rows of a lease outbox (`--engine`, Postgres by default) to the same broker, from the app's start to the last row acked
 * (every message counted on the broker). Medians of `--rounds` interleaved rounds. Not part of `npm test`.
 *
 *   npx tsx --conditions=@sqlinbox/source scripts/bench/relay-throughput.ts [--brokers=nats,amqp,redis,mqtt] [--n=10000] [--rounds=3] [--batches=1,64,500] [--workers=8] [--window=1000] [--engine=postgres|mariadb|sqlite]
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { defineInbox, field } from "@sqlinbox/core";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger, type Subscriber, subscriber } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { analyzeTable, connect, urlOf } from "./db.js";
import type { EngineName } from "./types.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const N = Number(flag("n") ?? 10_000);
const ROUNDS = Number(flag("rounds") ?? 3);
const WORKERS = Number(flag("workers") ?? 8);
/** The raw loops' publishes in flight before they await the confirms (each client's best of 256 / 1,000 / 5,000 here). */
const WINDOW = Number(flag("window") ?? 1000);
const batches = (flag("batches") ?? "1,64,500").split(",").map(Number);
// "none": the same drain with a batch handler that sends nothing, the database's own ceiling for a relay.
const brokers = (flag("brokers") ?? "none,nats,amqp,redis,mqtt").split(",") as BrokerName[];
type BrokerName = "none" | "nats" | "amqp" | "redis" | "mqtt";

/** The database the outbox table lives in. */
const ENGINE = (flag("engine") ?? "postgres") as EngineName;
if (!["postgres", "mariadb", "sqlite"].includes(ENGINE)) throw new Error(`--engine is postgres, mariadb or sqlite, got ${ENGINE}`);
const TABLE = "bench_relay_outbox";
const Outbox = defineInbox({
  table: TABLE,
  columns: { id: field.id().generated(), attempt: field.attempt().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<{ n: number; body: string }>() },
});
const BODY = "x".repeat(100);
const payload = (n: number) => ({ n, body: BODY });
const encoded = (n: number) => Buffer.from(JSON.stringify(payload(n)));

/** One broker: its raw publish loop, a relay subscriber for a queue, and a count of what it holds. */
interface Target {
  readonly name: BrokerName;
  /** Ready for a fresh round (an empty stream / queue / key); `tag` names the round's destination. */
  reset(tag: string): Promise<void>;
  raw(n: number): Promise<void>;
  relay(queue: InboxQueue<typeof Outbox>): Subscriber<typeof Outbox>;
  /** Messages the broker holds for this round. */
  count(): Promise<number>;
  close(): Promise<void>;
}

async function natsTarget(): Promise<Target> {
  const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");
  const { connect: connectNats } = await import("@nats-io/transport-node");
  const { natsOutbox } = await import("@sqlinbox/nats");
  const nc = await connectNats({ servers: process.env.SQLINBOX_NATS_URL ?? "127.0.0.1:4222" });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  let stream = "";
  return {
    name: "nats",
    async reset(tag) {
      if (stream !== "") await jsm.streams.delete(stream).catch(() => undefined);
      stream = `RELAY_${tag}`;
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    },
    async raw(n) {
      const inFlight: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        inFlight.push(js.publish(`${stream}.raw`, encoded(i), { msgID: `raw:${i}` }));
        if (inFlight.length >= WINDOW) await Promise.all(inFlight.splice(0));
      }
      await Promise.all(inFlight);
    },
    relay: (queue) => natsOutbox(queue, { js, subject: `${stream}.relay` }),
    count: async () => (await jsm.streams.info(stream)).state.messages,
    async close() {
      if (stream !== "") await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    },
  };
}

async function amqpTarget(): Promise<Target> {
  const amqp = await import("amqplib");
  const { amqpOutbox } = await import("@sqlinbox/amqp");
  const connection = await amqp.connect(process.env.SQLINBOX_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672");
  const channel = await connection.createConfirmChannel();
  let queue = "";
  return {
    name: "amqp",
    async reset(tag) {
      if (queue !== "") await channel.deleteQueue(queue).catch(() => undefined);
      queue = `relay_${tag}`;
      await channel.assertQueue(queue, { durable: true });
    },
    async raw(n) {
      for (let i = 0; i < n; i++) {
        channel.sendToQueue(queue, encoded(i), { persistent: true, messageId: `raw:${i}` });
        if (i % WINDOW === WINDOW - 1) await channel.waitForConfirms();
      }
      await channel.waitForConfirms();
    },
    relay: (q) => amqpOutbox(q, { connection, exchange: "", routingKey: queue }),
    count: async () => (await channel.checkQueue(queue)).messageCount,
    async close() {
      if (queue !== "") await channel.deleteQueue(queue).catch(() => undefined);
      await connection.close();
    },
  };
}

async function redisTarget(): Promise<Target> {
  const { Redis } = await import("ioredis");
  const { redisOutbox } = await import("@sqlinbox/redis");
  const redis = new Redis(process.env.SQLINBOX_REDIS_URL ?? "redis://127.0.0.1:6379");
  let key = "";
  return {
    name: "redis",
    async reset(tag) {
      if (key !== "") await redis.del(key);
      key = `relay:${tag}`;
    },
    async raw(n) {
      for (let at = 0; at < n; at += WINDOW) {
        const pipeline = redis.pipeline();
        for (let i = at; i < Math.min(n, at + WINDOW); i++) pipeline.xadd(key, "*", "id", `raw:${i}`, "payload", encoded(i));
        await pipeline.exec();
      }
    },
    relay: (q) => redisOutbox(q, { redis, stream: key }),
    count: () => redis.xlen(key),
    async close() {
      if (key !== "") await redis.del(key);
      redis.disconnect();
    },
  };
}

async function mqttTarget(): Promise<Target> {
  const mqtt = await import("mqtt");
  const { mqttOutbox } = await import("@sqlinbox/mqtt");
  const url = process.env.SQLINBOX_MQTT_URL ?? "mqtt://127.0.0.1:1883";
  const client = await mqtt.connectAsync(url, { protocolVersion: 5 });
  // The count: a subscriber of the round's topic at QoS 0 (Mosquitto queues at most 1,000 QoS 1 messages per
  // client and drops the rest; QoS 0 goes straight to the socket), counting what arrives.
  const counter = await mqtt.connectAsync(url, { protocolVersion: 5 });
  let topic = "";
  let arrived = 0;
  counter.on("message", () => void arrived++);
  return {
    name: "mqtt",
    async reset(tag) {
      if (topic !== "") await counter.unsubscribeAsync(topic);
      topic = `relay/${tag}`;
      arrived = 0;
      await counter.subscribeAsync(topic, { qos: 0 });
    },
    async raw(n) {
      const inFlight: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        inFlight.push(client.publishAsync(topic, encoded(i), { qos: 1 }));
        if (inFlight.length >= WINDOW) await Promise.all(inFlight.splice(0));
      }
      await Promise.all(inFlight);
    },
    relay: (q) => mqttOutbox(q, { client, topic }),
    count: async () => arrived,
    async close() {
      await client.endAsync();
      await counter.endAsync();
    },
  };
}

/** No broker: the relay's drain with a handler that sends nothing (its "raw" is an empty loop, not a rate to compare). */
async function noneTarget(): Promise<Target> {
  return {
    name: "none",
    reset: async () => {},
    raw: async () => {},
    relay: (q) => subscriber.batch(q, async () => {}),
    count: async () => N,
    close: async () => {},
  };
}

const targetOf: Record<BrokerName, () => Promise<Target>> = { none: noneTarget, nats: natsTarget, amqp: amqpTarget, redis: redisTarget, mqtt: mqttTarget };

const db = connect(ENGINE, 4);
/** `--verbose`: each relay round's rate, this process's CPU and the machine's (every core, from /proc/stat). */
const VERBOSE = argv.includes("--verbose");
/** `--count=events`: the end of a relay round is the N-th `succeeded` event, not the outbox seen empty. */
const COUNT_EVENTS = flag("count") === "events";
/** The machine's CPU counters; given a start, the share of every core busy since then. */
function machineCpu(): { busy: number; total: number };
function machineCpu(since: { busy: number; total: number }): string;
function machineCpu(since?: { busy: number; total: number }): { busy: number; total: number } | string {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const busy = total - (fields[3] ?? 0) - (fields[4] ?? 0);
  if (since === undefined) return { busy, total };
  return `${(((busy - since.busy) / (total - since.total)) * 100).toFixed(0)}% busy`;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Rows in the outbox, inserted in bulk and analyzed before the relay starts (untimed). */
async function fill(broker: SqlBroker, route: string): Promise<void> {
  await sql.raw(`drop table if exists ${TABLE}`).execute(db);
  await createInboxTable(db, Outbox);
  for (let at = 0; at < N; at += 500)
    await broker.publishMany(
      route,
      Array.from({ length: Math.min(500, N - at) }, (_, k) => payload(at + k)),
    );
  await analyzeTable(db, ENGINE, TABLE);
}

async function relayRound(target: Target, batch: number, tag: string): Promise<number> {
  await target.reset(tag);
  const route = `relay.${tag}`;
  const broker = SqlBroker.fromUrl(urlOf(ENGINE), { pool: { max: WORKERS + 4 } }).route(Outbox, route);
  await fill(broker, route);
  const queue = InboxQueue.of(Outbox, route).batch(batch).workers(WORKERS).pollInterval(50).lease(30_000);
  // The end: the outbox seen empty (every row acked: the lease form deletes a row on its ack), by a read of its
  // lowest id every 5 ms on a connection of its own. `--count=events` counts the app's `succeeded` events instead, which
  // costs the relay's process an event object per row that neither a relay needs nor the raw loop pays.
  let acked = 0;
  let lastAck = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  const machine = machineCpu();
  const plain = new App({ name: "relay-bench", version: "0", logger: silentLogger });
  const app = COUNT_EVENTS
    ? plain.on("succeeded", () => {
        if (++acked === N) lastAck = performance.now();
      })
    : plain;
  const running = await app.withBroker(broker, (b) => b.include(target.relay(queue))).start();
  try {
    if (COUNT_EVENTS) await until(async () => acked >= N, 300_000, "the outbox to drain");
    else {
      // Rows go in id order, so the read starts at the lowest id it saw last: an index probe, not a walk past the deleted rows.
      let lowest = 0;
      await until(
        async () => {
          const [row] = (await sql<{ id: number | string }>`select id from ${sql.table(TABLE)} where id >= ${lowest} order by id limit 1`.execute(db)).rows;
          if (row !== undefined) lowest = Number(row.id);
          return row === undefined;
        },
        300_000,
        "the outbox to drain",
      );
      lastAck = performance.now();
    }
  } finally {
    await running.stop();
  }
  const ms = lastAck - started;
  const used = process.cpuUsage(cpu);
  if (VERBOSE)
    console.log(
      `  ${target.name} b${batch}: ${((N * 1000) / ms).toFixed(0)}/s, this process ${(((used.user + used.system) / 1000 / ms) * 100).toFixed(0)}% of a core (${((used.user + used.system) / N).toFixed(1)} µs/msg), machine ${machineCpu(machine)}`,
    );
  const left = Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(TABLE)}`.execute(db)).rows[0]?.n);
  if (left !== 0) throw new Error(`${left} outbox rows left after ${N} acks`);
  await until(async () => (await target.count()) >= N, 30_000, `${N} messages on ${target.name}`);
  const held = await target.count();
  if (held !== N) throw new Error(`${target.name}: ${held} messages for ${N} rows`);
  return (N * 1000) / ms;
}

async function rawRound(target: Target, tag: string): Promise<number> {
  await target.reset(tag);
  const started = performance.now();
  await target.raw(N);
  const ms = performance.now() - started;
  await until(async () => (await target.count()) >= N, 30_000, `${N} raw messages on ${target.name}`);
  return (N * 1000) / ms;
}

console.log(`relay throughput: ${ENGINE} outbox, N ${N}, ${ROUNDS} rounds, workers ${WORKERS}, batches ${batches.join("/")}, load ${loadavg()[0]?.toFixed(1)}`);
for (const name of brokers) {
  try {
    await measure(name);
  } catch (error) {
    console.log(`${name}: FAILED: ${(error as Error).message}`);
  }
}
await sql.raw(`drop table if exists ${TABLE}`).execute(db);
await db.destroy();

async function measure(name: BrokerName): Promise<void> {
  const target = await targetOf[name]();
  const raw: number[] = [];
  const relay = new Map<number, number[]>(batches.map((b) => [b, []]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      raw.push(await rawRound(target, `${name}_raw_${round}_${Date.now() % 100_000}`));
      for (const batch of batches) relay.get(batch)?.push(await relayRound(target, batch, `${name}_b${batch}_${round}_${Date.now() % 100_000}`));
    }
  } finally {
    await target.close();
  }
  const rawMedian = median(raw);
  if (name === "none") {
    console.log(`no broker (the outbox's drain alone): ${batches.map((b) => `batch(${b}) ${median(relay.get(b) ?? []).toFixed(0)} rows/s`).join(", ")}`);
    return;
  }
  const cells = batches.map((b) => {
    const m = median(relay.get(b) ?? []);
    return `batch(${b}) ${m.toFixed(0)}/s = ${(m / rawMedian).toFixed(2)}×`;
  });
  console.log(`${name}: raw ${rawMedian.toFixed(0)} msg/s (${raw.map((r) => r.toFixed(0)).join(", ")}); relay ${cells.join(", ")}`);
}
