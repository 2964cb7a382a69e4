/**
 * The brokers of the bridge soak (`scripts/soak/bridges.ts`): for each, a server of the soak's own that it can
 * restart, a relay and an inbox bridge as a worker process builds them, what a consumer on the broker received
 * from the relays, and a producer of the messages the inbox bridges store.
 *
 * Redis, NATS and Mosquitto run as servers this soak starts on ports of their own (Redis append-only with an
 * fsync per write, JetStream on a file store, Mosquitto with persistence and no cap on queued messages) and
 * restarts by their pid; RabbitMQ is the machine's node (`bash scripts/services.sh`), restarted with
 * `rabbitmqctl stop_app` / `start_app` as an operator would, its queues durable and its messages persistent.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { InboxQueue, Logger, SqlBroker, Subscriber } from "@sqlinbox/runtime";

export type SoakBrokerName = "redis" | "nats" | "amqp" | "mqtt";

/** What the consumer on the broker saw of one relayed message, in arrival order. */
export interface Received {
  /** The message id the relay gave it: `<table>:<row id>`. */
  readonly id: string;
  readonly customer: number;
}

/** A bridge the worker process runs: started, and stopped only by a SIGKILL (or at the end). */
export interface RunningInbox {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly counts: { readonly stored: number; readonly duplicates: number };
}

/** One broker, from the soak's side (`address` is where its server listens, handed to the worker processes). */
export interface SoakBroker {
  readonly name: SoakBrokerName;
  readonly address: string;
  /** How a restart is done, for the report. */
  readonly restartKind: string;
  start(): Promise<void>;
  /** Stops the server (`restart` then starts it again). */
  stop(): Promise<void>;
  /** Ready for a run named `tag`: its stream / queue / topic, and the consumer that records what arrives. */
  prepare(tag: string): Promise<void>;
  /** What arrived from the relays so far, in order. */
  received(): Promise<readonly Received[]>;
  /** Sends `n` messages (ids `soak:<i>`) to where the inbox bridges read, each once, confirmed by the broker. */
  produce(n: number): Promise<void>;
  close(): Promise<void>;
}

/** The relay and the inbox bridge, as a worker process builds them from `address` and `tag`. */
export interface SoakClients {
  relay<S extends AnyInboxSpec>(queue: InboxQueue<S>): Subscriber<S>;
  // biome-ignore lint/suspicious/noExplicitAny: a broker with the soak's inbox route
  inbox(broker: SqlBroker<any, any>, route: string, logger: Logger): RunningInbox;
  close(): Promise<void>;
}

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** A server process the soak started, stopped by its pid. */
class OwnServer {
  #child: ChildProcess | undefined;
  constructor(
    readonly command: string,
    readonly args: readonly string[],
    readonly answers: () => Promise<boolean>,
    readonly stopSignal: NodeJS.Signals,
  ) {}
  async start(): Promise<void> {
    this.#child = spawn(this.command, this.args, { stdio: "ignore" });
    await until(this.answers, 20_000, `${this.command} to answer`);
  }
  async stop(signal = this.stopSignal): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill(signal);
    await exited;
  }
}

const tagOf = () => process.env.SOAK_TAG ?? "soak";
const streamOf = (tag: string) => `soak_${tag}`;

// ---------------------------------------------------------------- Redis

async function redisBroker(): Promise<SoakBroker> {
  const { Redis } = await import("ioredis");
  const port = 17_500 + Math.floor(Math.random() * 1000);
  const dir = mkdtempSync(join(tmpdir(), "soak-redis-"));
  const client = () => new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  const server = new OwnServer(
    "/usr/bin/redis-server",
    ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always"],
    async () => {
      const probe = client();
      probe.on("error", () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === "PONG";
      } finally {
        probe.disconnect();
      }
    },
    "SIGKILL",
  );
  let stream = "";
  const admin = () => {
    const r = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 3, retryStrategy: () => 200 });
    r.on("error", () => {});
    return r;
  };
  return {
    name: "redis",
    address: `redis://127.0.0.1:${port}`,
    restartKind: "redis-server SIGKILLed (append-only file, fsync per write) and started again",
    start: () => server.start(),
    stop: () => server.stop(),
    async prepare(tag) {
      stream = streamOf(tag);
      const r = admin();
      // The inbox's group reads from the stream's start: the messages produced before a bridge runs are its too.
      await r.call("XGROUP", ["CREATE", `${stream}_in`, "billing", "0", "MKSTREAM"]);
      r.disconnect();
    },
    async received() {
      const r = admin();
      try {
        const reply = (await r.call("XRANGE", [stream, "-", "+"])) as Array<[string, string[]]>;
        return reply.map(([, list]) => {
          const fields: Record<string, string> = {};
          for (let i = 0; i + 1 < list.length; i += 2) fields[list[i] as string] = list[i + 1] as string;
          return { id: fields.id ?? "", customer: (JSON.parse(fields.payload ?? "{}") as { customer: number }).customer };
        });
      } finally {
        r.disconnect();
      }
    },
    async produce(n) {
      const r = admin();
      for (let at = 0; at < n; at += 500) {
        const pipeline = r.pipeline();
        for (let i = at; i < Math.min(n, at + 500); i++) pipeline.xadd(`${stream}_in`, "*", "id", `soak:${i}`, "payload", JSON.stringify({ n: i, customer: i % 50 }));
        await pipeline.exec();
      }
      r.disconnect();
    },
    async close() {
      await server.stop("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function redisClients(address: string): Promise<SoakClients> {
  const { Redis } = await import("ioredis");
  const { redisOutbox, redisInbox } = await import("@sqlinbox/redis");
  const connection = () => {
    const r = new Redis(address, { maxRetriesPerRequest: 1, retryStrategy: () => 200 });
    r.on("error", () => {});
    return r;
  };
  const relayRedis = connection();
  const inboxRedis = connection();
  const stream = streamOf(tagOf());
  return {
    relay: (queue) => redisOutbox(queue, { redis: relayRedis, stream }),
    inbox: (broker, route, logger) =>
      redisInbox(broker, route as never, {
        redis: inboxRedis,
        stream: `${stream}_in`,
        group: "billing",
        consumer: `bridge-${process.pid}`,
        blockMs: 200,
        claimIdleMs: 1000,
        logger,
      }),
    async close() {
      relayRedis.disconnect();
      inboxRedis.disconnect();
    },
  };
}

// ---------------------------------------------------------------- NATS JetStream

async function natsBroker(): Promise<SoakBroker> {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstream, jetstreamManager, AckPolicy, DeliverPolicy } = await import("@nats-io/jetstream");
  const port = 14_500 + Math.floor(Math.random() * 1000);
  const store = mkdtempSync(join(tmpdir(), "soak-nats-"));
  const server = new OwnServer(
    "/usr/sbin/nats-server",
    ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store],
    async () => {
      await (await connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: 0 })).close();
      return true;
    },
    "SIGKILL",
  );
  let stream = "";
  const admin = () => connect({ servers: `127.0.0.1:${port}`, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  return {
    name: "nats",
    address: `127.0.0.1:${port}`,
    restartKind: "nats-server SIGKILLed (JetStream file store) and started again",
    start: () => server.start(),
    stop: () => server.stop(),
    async prepare(tag) {
      stream = streamOf(tag);
      const nc = await admin();
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
      await jsm.streams.add({ name: `${stream}_in`, subjects: [`${stream}_in.>`] });
      await jsm.consumers.add(`${stream}_in`, { durable_name: "billing", ack_policy: AckPolicy.Explicit, ack_wait: 2_000_000_000 });
      await nc.close();
    },
    async received() {
      const nc = await admin();
      try {
        const js = jetstream(nc);
        const jsm = await jetstreamManager(nc);
        const total = (await jsm.streams.info(stream)).state.messages;
        const out: Received[] = [];
        if (total === 0) return out;
        const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
        const messages = await consumer.consume();
        for await (const m of messages) {
          out.push({ id: m.headers?.get("Nats-Msg-Id") ?? "", customer: (m.json() as { customer: number }).customer });
          if (out.length >= total) break;
        }
        return out;
      } finally {
        await nc.close();
      }
    },
    async produce(n) {
      const nc = await admin();
      const js = jetstream(nc);
      for (let at = 0; at < n; at += 500) {
        const sends: Promise<unknown>[] = [];
        for (let i = at; i < Math.min(n, at + 500); i++) sends.push(js.publish(`${stream}_in.orders`, JSON.stringify({ n: i, customer: i % 50 }), { msgID: `soak:${i}` }));
        await Promise.all(sends);
      }
      await nc.close();
    },
    async close() {
      await server.stop("SIGKILL");
      rmSync(store, { recursive: true, force: true });
    },
  };
}

async function natsClients(address: string): Promise<SoakClients> {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstream } = await import("@nats-io/jetstream");
  const { natsOutbox, natsInbox } = await import("@sqlinbox/nats");
  // A worker started while the server is down (the restart) waits for it, as an app's client should be set up to.
  const nc = await connect({ servers: address, maxReconnectAttempts: -1, reconnectTimeWait: 200, waitOnFirstConnect: true });
  const js = jetstream(nc);
  const stream = streamOf(tagOf());
  return {
    relay: (queue) => natsOutbox(queue, { js, subject: `${stream}.orders`, ackTimeoutMs: 2000 }),
    inbox: (broker, route, logger) => natsInbox(broker, route as never, { js, stream: `${stream}_in`, consumer: "billing", logger }),
    close: () => nc.close(),
  };
}

// ---------------------------------------------------------------- RabbitMQ

async function amqpBroker(): Promise<SoakBroker> {
  const amqp = await import("amqplib");
  const url = process.env.SQLINBOX_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";
  let queue = "";
  const admin = async () => {
    const connection = await amqp.connect(url);
    connection.on("error", () => {});
    return connection;
  };
  const ctl = (command: string) => run("rabbitmqctl", [command], { timeout: 120_000 });
  return {
    name: "amqp",
    address: url,
    restartKind: "rabbitmqctl stop_app, then start_app (durable queues, persistent messages)",
    start: async () => {
      await ctl("start_app");
      await until(async () => (await admin().then((c) => c.close())) === undefined, 60_000, "RabbitMQ to take connections");
    },
    stop: async () => void (await ctl("stop_app")),
    async prepare(tag) {
      queue = streamOf(tag);
      const connection = await admin();
      const channel = await connection.createChannel();
      await channel.assertQueue(queue, { durable: true });
      await channel.assertQueue(`${queue}_in`, { durable: true });
      await connection.close();
    },
    async received() {
      // Read once, at the end: every message the queue holds, acked as read (the queue is the soak's own).
      const connection = await admin();
      try {
        const channel = await connection.createChannel();
        const out: Received[] = [];
        for (;;) {
          const m = await channel.get(queue, { noAck: true });
          if (m === false) break;
          out.push({ id: String(m.properties.messageId), customer: (JSON.parse(m.content.toString()) as { customer: number }).customer });
        }
        stored.push(...out);
        return [...stored];
      } finally {
        await connection.close();
      }
    },
    async produce(n) {
      const connection = await admin();
      const channel = await connection.createConfirmChannel();
      for (let i = 0; i < n; i++) {
        channel.sendToQueue(`${queue}_in`, Buffer.from(JSON.stringify({ n: i, customer: i % 50 })), { persistent: true, messageId: `soak:${i}` });
        if (i % 500 === 499) await channel.waitForConfirms();
      }
      await channel.waitForConfirms();
      await connection.close();
    },
    async close() {
      const connection = await admin();
      const channel = await connection.createChannel();
      await channel.deleteQueue(queue).catch(() => {});
      await channel.deleteQueue(`${queue}_in`).catch(() => {});
      await connection.close().catch(() => {});
    },
  };
}
/** The messages already read off the relay queue (a read empties it). */
const stored: Received[] = [];

async function amqpClients(address: string): Promise<SoakClients> {
  const amqp = await import("amqplib");
  const { amqpOutbox, amqpInbox } = await import("@sqlinbox/amqp");
  // A factory: the relay and the bridge connect again by themselves after the broker went away.
  const connection = async () => {
    const c = await amqp.connect(address);
    c.on("error", () => {});
    return c;
  };
  const queue = streamOf(tagOf());
  return {
    relay: (q) => amqpOutbox(q, { connection, exchange: "", routingKey: queue }),
    inbox: (broker, route, logger) => amqpInbox(broker, route as never, { connection, queue: `${queue}_in`, prefetch: 64, logger }),
    close: async () => {},
  };
}

// ---------------------------------------------------------------- MQTT (Mosquitto)

async function mqttBroker(): Promise<SoakBroker> {
  const mqtt = (await import("mqtt")).default;
  const port = 19_500 + Math.floor(Math.random() * 1000);
  const url = `mqtt://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), "soak-mosquitto-"));
  const config = join(dir, "mosquitto.conf");
  // No cap on what a session queues while its client is away (the default keeps 1,000 and drops the rest).
  // `user root`: started as root, Mosquitto would drop to its own user, which cannot write its persistence file into
  // this root-owned directory: it then keeps no session and no queued message across the restart.
  writeFileSync(
    config,
    `listener ${port} 127.0.0.1\nuser root\nallow_anonymous true\npersistence true\npersistence_location ${dir}/\nmax_queued_messages 0\nmax_inflight_messages 0\n`,
  );
  const server = new OwnServer(
    "/usr/sbin/mosquitto",
    ["-c", config],
    async () => {
      await (await mqtt.connectAsync(url, { protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 1000 })).endAsync();
      return true;
    },
    "SIGTERM",
  );
  let topic = "";
  const arrived: Received[] = [];
  let consumer: import("mqtt").MqttClient | undefined;
  return {
    name: "mqtt",
    address: url,
    restartKind: "mosquitto stopped (SIGTERM: it writes its sessions and queued messages) and started again",
    start: () => server.start(),
    stop: () => server.stop(),
    async prepare(tag) {
      topic = `soak/${tag}`;
      // The consumer: a persistent session at QoS 1, so that what is published while it reconnects waits for it.
      consumer = await mqtt.connectAsync(url, {
        protocolVersion: 5,
        clientId: `soak-consumer-${tag}`,
        clean: false,
        properties: { sessionExpiryInterval: 3600 },
        reconnectPeriod: 200,
      });
      consumer.on("error", () => {});
      consumer.on("message", (_topic, payload, packet) => {
        const id = packet.properties?.userProperties?.["sqlinbox-id"];
        arrived.push({ id: String(id), customer: (JSON.parse(payload.toString()) as { customer: number }).customer });
      });
      await consumer.subscribeAsync(topic, { qos: 1 });
      // The bridge's session exists before anything is produced: a session subscribed once gets what comes while it is away.
      const bridge = await mqtt.connectAsync(url, { protocolVersion: 5, clientId: `soak-bridge-${tag}`, clean: false, properties: { sessionExpiryInterval: 3600 } });
      await bridge.subscribeAsync(`${topic}_in`, { qos: 1 });
      await bridge.endAsync();
    },
    received: async () => [...arrived],
    async produce(n) {
      const client = await mqtt.connectAsync(url, { protocolVersion: 5 });
      for (let at = 0; at < n; at += 500) {
        const sends: Promise<unknown>[] = [];
        for (let i = at; i < Math.min(n, at + 500); i++)
          sends.push(client.publishAsync(`${topic}_in`, JSON.stringify({ n: i, customer: i % 50 }), { qos: 1, properties: { userProperties: { "sqlinbox-id": `soak:${i}` } } }));
        await Promise.all(sends);
      }
      await client.endAsync();
    },
    async close() {
      await consumer?.endAsync().catch(() => {});
      await server.stop("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function mqttClients(address: string): Promise<SoakClients> {
  const mqtt = (await import("mqtt")).default;
  const { mqttOutbox, mqttInbox } = await import("@sqlinbox/mqtt");
  // Not connectAsync: a worker started while the server is down (the restart) keeps trying, and its relay's publishes wait or time out.
  const client = mqtt.connect(address, { protocolVersion: 5, reconnectPeriod: 200 });
  client.on("error", () => {});
  const topic = `soak/${tagOf()}`;
  return {
    relay: (queue) => mqttOutbox(queue, { client, topic, ackTimeoutMs: 2000 }),
    inbox: (broker, route, logger) =>
      mqttInbox(broker, route as never, { url: address, clientId: `soak-bridge-${tagOf()}`, topic: `${topic}_in`, logger, connectOptions: { reconnectPeriod: 200 } }),
    close: () => client.endAsync(),
  };
}

export const soakBrokers: Record<SoakBrokerName, () => Promise<SoakBroker>> = { redis: redisBroker, nats: natsBroker, amqp: amqpBroker, mqtt: mqttBroker };
export const soakClients: Record<SoakBrokerName, (address: string) => Promise<SoakClients>> = { redis: redisClients, nats: natsClients, amqp: amqpClients, mqtt: mqttClients };
