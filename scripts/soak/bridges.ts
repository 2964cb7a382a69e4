/**
 * The outbox and inbox bridges under faults, against a real broker: not part of `npm test` (minutes per broker,
 * and it restarts brokers); its results go to `bench-results/bridge-soak-<broker>-<time>.json`.
 *
 *   npx tsx --conditions=@sqlinbox/source scripts/soak/bridges.ts --broker=redis|nats|amqp|mqtt [--rows=20000] [--engine=postgres|mariadb]
 *
 * Outbox: two publisher processes write `rows` orders in business transactions of ten (an order row and its outbox
 * row, on 50 customers, each customer an order key and written by one of the publishers) while two relay processes send the outbox to the broker; every
 * 2–4 s one relay is SIGKILLed and a new one started in its place, and once, a quarter of the way through, the broker
 * is restarted. At the end: the outbox table empty, every row's message on the broker (counted by a consumer
 * there), copies counted, and each customer's messages in the order of its rows (a copy may repeat the row before it,
 * never go back further).
 * Inbox: `rows` messages produced on the broker, stored by an inbox bridge process SIGKILLed every 2–4 s and started
 * again, and handled by a subscription in this process: exactly `rows` inbox rows, each handled once.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { createInterface } from "node:readline";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { connect } from "../bench/db.js";
import type { EngineName } from "../bench/types.js";
import { type Received, type SoakBrokerName, soakBrokers } from "./bridge-brokers.js";
import { CUSTOMERS, inboxOf, outboxOf } from "./soak-tables.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BROKER = (flag("broker") ?? "redis") as SoakBrokerName;
const ROWS = Number(flag("rows") ?? 20_000);
const ENGINE = (flag("engine") ?? "postgres") as EngineName;
/** `--kill-every=2000-4000`: the range of ms between two kills of a relay, or of the inbox bridge. */
const [KILL_LOW, KILL_HIGH] = (flag("kill-every") ?? "2000-4000").split("-").map(Number) as [number, number];
if (!(BROKER in soakBrokers)) throw new Error(`--broker is redis, nats, amqp or mqtt, not ${BROKER}`);
if (ENGINE === "sqlite") throw new Error("--engine is postgres or mariadb: the soak's processes share a server");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const between = (low: number, high: number) => low + Math.random() * (high - low);
const log = (text: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${text}`);

interface Worker {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  readonly exited: Promise<number | null>;
}

const tag = `${BROKER}_${Date.now() % 1_000_000}`;
const outboxTable = `soak_out_${tag}`;

/** Every worker process started: killed when the soak ends, however it ends (a SIGTERM or SIGINT ends it through `exit`). */
const spawned = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(1));

function startWorker(role: string, env: Record<string, string>): Worker {
  const child = spawn(process.execPath, ["--import", "tsx", "--conditions=@sqlinbox/source", new URL("./bridge-child.ts", import.meta.url).pathname], {
    env: { ...process.env, SOAK_ROLE: role, SOAK_BROKER: BROKER, SOAK_ADDRESS: broker.address, SOAK_TAG: tag, SOAK_OUTBOX: outboxTable, SOAK_ENGINE: ENGINE, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  spawned.add(child);
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
    try {
      lines.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      // not a line of ours
    }
  });
  return { child, lines, exited: new Promise((resolve) => child.on("exit", resolve)) };
}

async function kill(worker: Worker): Promise<void> {
  if (worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill("SIGKILL");
    await worker.exited;
  }
}

async function until(check: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

const broker = await soakBrokers[BROKER]();
const db = connect(ENGINE, 4);
const count = async (table: string, where = sql`1 = 1`) => Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)} where ${where}`.execute(db)).rows[0]?.n);
const result: Record<string, unknown> = { broker: BROKER, engine: ENGINE, rows: ROWS, at: new Date().toISOString(), load: loadavg()[0] };

try {
  await broker.start();
  await broker.prepare(tag);
  await createInboxTable(db, outboxOf(outboxTable));
  await createInboxTable(db, inboxOf(`${outboxTable}_in`));
  await sql.raw(`create table ${outboxTable}_orders (n bigint primary key, customer bigint not null)`).execute(db);
  log(`${BROKER}: ${ROWS} rows, ${ENGINE}, broker at ${broker.address}`);
  result.outbox = await outboxSoak();
  result.inbox = await inboxSoak();
  mkdirSync("bench-results", { recursive: true });
  const file = `bench-results/bridge-soak-${BROKER}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  log(`written ${file}`);
  console.log(JSON.stringify(result, null, 2));
  const failed = (["outbox", "inbox"] as const).filter((part) => (result[part] as { ok: boolean }).ok !== true);
  if (failed.length > 0) {
    log(`FAILED: ${failed.join(" and ")}`);
    process.exitCode = 1;
  }
} finally {
  await broker.close().catch(() => {});
  for (const t of [outboxTable, `${outboxTable}_in`, `${outboxTable}_orders`]) await sql.raw(`drop table if exists ${t}`).execute(db);
  await db.destroy();
}

async function outboxSoak(): Promise<Record<string, unknown>> {
  const started = Date.now();
  const relays = [startWorker("relay", {}), startWorker("relay", {})];
  const half = Math.floor(ROWS / 2);
  const publishers = [
    startWorker("publisher", { SOAK_ROWS: String(half), SOAK_FROM: "0", SOAK_CUSTOMER_BASE: "0" }),
    startWorker("publisher", { SOAK_ROWS: String(ROWS - half), SOAK_FROM: String(half), SOAK_CUSTOMER_BASE: String(CUSTOMERS / 2) }),
  ];
  let kills = 0;
  let restarted = false;
  let restartMs = 0;
  const published = () => publishers.reduce((sum, p) => sum + Number(p.lines.filter((l) => l.event === "published").at(-1)?.count ?? 0), 0);
  const publishing = Promise.all(publishers.map((p) => p.exited));
  let done = false;
  void publishing.then(() => {
    done = true;
  });
  // Kills until the outbox is empty after the publishers ended.
  for (let k = 0; ; k++) {
    await sleep(between(KILL_LOW, KILL_HIGH));
    if (!restarted && published() >= ROWS / 4) {
      restarted = true;
      const at = Date.now();
      log(`restarting the broker (${broker.restartKind}) at ${published()} published`);
      await broker.stop();
      await sleep(2000);
      await broker.start();
      restartMs = Date.now() - at;
      log(`broker back after ${restartMs} ms`);
    }
    const victim = k % 2;
    await kill(relays[victim] as Worker);
    kills++;
    relays[victim] = startWorker("relay", {});
    const left = await count(outboxTable);
    log(`relay SIGKILLed (${kills}); published ${published()}, outbox holds ${left}`);
    if (done && left === 0) break;
    if (Date.now() - started > 15 * 60_000) throw new Error("the outbox soak ran past 15 minutes");
  }
  for (const p of publishers) if (p.child.exitCode !== 0) throw new Error(`a publisher exited ${p.child.exitCode}`);
  await until(async () => (await count(outboxTable)) === 0, 120_000, "the outbox to empty");
  const drainedMs = Date.now() - started;
  let received: readonly Received[] = [];
  try {
    await until(
      async () => {
        received = await broker.received();
        return new Set(received.map((r) => r.id)).size >= ROWS;
      },
      120_000,
      `${ROWS} distinct messages on the broker`,
    );
  } catch (error) {
    // Reported with the rest (the inbox part still runs); the run ends failed.
    log(`${(error as Error).message}`);
  }
  const seen = new Set(received.map((r) => Number(r.id.slice(r.id.lastIndexOf(":") + 1))));
  const missing = Array.from({ length: ROWS }, (_, i) => i + 1).filter((id) => !seen.has(id));
  await Promise.all(relays.map(kill));
  const ids = received.map((r) => Number(r.id.slice(r.id.lastIndexOf(":") + 1)));
  const distinct = new Set(ids).size;
  // Per customer, each message's row id is at least the previous one's: a copy may repeat a row, never go back past it.
  const last = new Map<number, number>();
  let outOfOrder = 0;
  const firstOutOfOrder: string[] = [];
  for (const [i, r] of received.entries()) {
    const id = ids[i] as number;
    if (id < (last.get(r.customer) ?? 0)) {
      outOfOrder++;
      if (firstOutOfOrder.length < 10) firstOutOfOrder.push(`customer ${r.customer}: row ${id} at message ${i}, after row ${last.get(r.customer)}`);
    }
    last.set(r.customer, Math.max(id, last.get(r.customer) ?? 0));
  }
  const outbox = {
    publishedRows: await count(`${outboxTable}_orders`),
    messages: received.length,
    distinct,
    duplicates: received.length - distinct,
    missing: missing.length,
    ...(missing.length > 0 ? { firstMissingRowIds: missing.slice(0, 20) } : {}),
    outOfOrder,
    ...(outOfOrder > 0 ? { firstOutOfOrder } : {}),
    outboxLeft: await count(outboxTable),
    relayKills: kills,
    brokerRestart: { kind: broker.restartKind, downMs: restartMs },
    seconds: Math.round((Date.now() - started) / 100) / 10,
    drainedSeconds: Math.round(drainedMs / 100) / 10,
  };
  log(`outbox: ${JSON.stringify(outbox)}`);
  const ok = outbox.publishedRows === ROWS && distinct === ROWS && outOfOrder === 0 && outbox.outboxLeft === 0 && (BROKER !== "nats" || outbox.duplicates === 0);
  return { ok, ...outbox };
}

async function inboxSoak(): Promise<Record<string, unknown>> {
  const started = Date.now();
  await broker.produce(ROWS);
  log(`${ROWS} messages produced in ${Date.now() - started} ms`);
  const handled = new Map<number, number>();
  const Inbox = inboxOf(`${outboxTable}_in`);
  const sqlBroker = SqlBroker.fromKysely(db).lease(3000).route(Inbox, "soak.in");
  const app = await new App({ name: "soak-inbox", version: "0", logger: silentLogger })
    .withBroker(sqlBroker, (b) =>
      b.include(
        subscriber(InboxQueue.of(Inbox, "soak.in").batch(64).workers(4).pollInterval(50), async (order) => {
          handled.set(order.n, (handled.get(order.n) ?? 0) + 1);
        }),
      ),
    )
    .start();
  let bridge = startWorker("bridge", {});
  let kills = 0;
  const stored = () => count(`${outboxTable}_in`);
  try {
    while ((await stored()) < ROWS) {
      await sleep(between(KILL_LOW, KILL_HIGH));
      await kill(bridge);
      kills++;
      bridge = startWorker("bridge", {});
      log(`bridge SIGKILLed (${kills}); inbox holds ${await stored()} rows, ${handled.size} handled`);
      if (Date.now() - started > 15 * 60_000) throw new Error("the inbox soak ran past 15 minutes");
    }
    // Redeliveries of what the last killed bridge stored and had not acked come to the bridge now running.
    await sleep(3000);
    await until(async () => (await count(`${outboxTable}_in`, sql`processed_at is null`)) === 0, 60_000, "every inbox row handled");
  } finally {
    await kill(bridge);
    await app.stop();
  }
  const counts = [...handled.values()];
  const inbox = {
    rows: await stored(),
    distinctMessageIds: Number((await sql<{ n: string }>`select count(distinct message_id) as n from ${sql.table(`${outboxTable}_in`)}`.execute(db)).rows[0]?.n),
    handled: handled.size,
    handledTwice: counts.filter((c) => c > 1).length,
    bridgeKills: kills,
    seconds: Math.round((Date.now() - started) / 100) / 10,
  };
  log(`inbox: ${JSON.stringify(inbox)}`);
  return { ok: inbox.rows === ROWS && inbox.distinctMessageIds === ROWS && inbox.handled === ROWS && inbox.handledTwice === 0, ...inbox };
}
