/**
 * SQLite shared by processes: a consumer app on a 30 s poll sees another process's publish at once,
 * because it watches the database file and reads the data version when the file changes. Its own
 * writes wake nothing (the data version tells them apart), and an in-memory database has no file to
 * watch (nothing is started, nothing is logged).
 */
import { sql } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber, type Logger } from "../../src/index.js";
import { databaseFile, FileWatch } from "../../src/publish/file-watch.js";
import { brokerParts } from "../../src/publish/sql-broker.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { engineNamed, selects, unique } from "../support/engines.js";
import { jobsSpec } from "../support/fixtures.js";
import { sleep, waitFor } from "../support/sleep.js";
import { startNotifyProducer } from "../support/notify-producer.js";

const sqlite = engineNamed("sqlite");

// Runs when the run selects SQLite: only a SQLite database is a file another process can write and this one watch.
describe.runIf(selects("sqlite"))("SQLite: another process's commit wakes subscriptions through the file", () => {
  const stops: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  }, 30_000);

  /** A consumer app here on a 30 s poll over a fresh file; returns the URL and the time each job started. */
  async function consumer(url: string, table: string, logger: Logger = silentLogger) {
    const db: AnyKysely = await sqlite.connect(url);
    await sql`PRAGMA journal_mode = WAL`.execute(db);
    await sqlite.createLeaseTable(db, table);
    await db.destroy();
    const started = new Map<number, number>();
    const sub = subscriber(InboxQueue.of(jobsSpec(table), "jobs").lease(5000).pollInterval(30_000), async (job) => void started.set(job.n, Date.now()));
    const broker = SqlBroker.fromUrl(url).route(jobsSpec(table), "jobs");
    const app = await new App({ name: "consumer", version: "0", logger }).withBroker(broker, (b) => b.include(sub)).start();
    stops.push(() => app.stop());
    return { broker, started };
  }

  /** A producer process with no App on the same file (`notify-producer.ts`): each call publishes the next `n`, resolving when its publish did. */
  const producer = (url: string, table: string) => startNotifyProducer({ url, table, listen: false, connectMs: 90_000, stops });

  test("a producer process's publish starts in a consumer on a 30 s poll within 100 ms, each of 10 times", async () => {
    const url = sqlite.url();
    const table = unique("fw_wake");
    const { started } = await consumer(url, table);
    const { publish, published } = await producer(url, table);
    // n: 0 woke the consumer through the file too; let it settle so only later publishes are measured.
    expect(await waitFor(() => started.has(0), 2000)).toBe(true);
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      const n = await publish();
      expect(await waitFor(() => started.has(n), 2000)).toBe(true);
      delays.push((started.get(n) as number) - (published.get(n) as number));
      await sleep(50);
    }
    console.log(`a publish in another process started ${delays.join(", ")} ms after it resolved there`);
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(100);
  }, 150_000);

  test("the consumer's own writes (claims, acks) do not keep waking it: after its drain it claims nothing until another process commits", async () => {
    const url = sqlite.url();
    const table = unique("fw_self");
    const { broker, started } = await consumer(url, table);
    const database = brokerParts(broker).connection.require();
    const claims = { count: 0 };
    // The test hook every statement passes through: counts claims and injects nothing.
    database.fault = (kind) => {
      if (kind === "claim") claims.count++;
      return undefined;
    };
    for (let n = 1; n <= 20; n++) await broker.publish("jobs", { n });
    expect(await waitFor(() => started.size === 20, 5000)).toBe(true);
    await sleep(300);
    const afterDrain = claims.count;
    expect(afterDrain).toBeGreaterThan(0);
    await sleep(1500);
    // Its own claims and acks changed the file all along: had they woken it, it would claim again and again.
    expect(claims.count).toBe(afterDrain);
    // Another connection's commit (a second connection to the file, as another process would) does wake it.
    const other: AnyKysely = await sqlite.connect(url);
    stops.push(() => other.destroy());
    await sql`UPDATE ${sql.id(table)} SET attempt = attempt WHERE id = 0`.execute(other);
    await sql`INSERT INTO ${sql.id(table)} (payload) VALUES (${Buffer.from(JSON.stringify({ n: 99 }))})`.execute(other);
    expect(await waitFor(() => started.has(99), 1000)).toBe(true);
    expect(claims.count).toBeGreaterThan(afterDrain);
  });

  test("a busy app's own commits cost a few data-version reads a second, not one each", async () => {
    const url = sqlite.url();
    const table = unique("fw_busy");
    const { broker, started } = await consumer(url, table);
    const database = brokerParts(broker).connection.require();
    const counts = new Map<string, number>();
    database.fault = (kind) => {
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      return undefined;
    };
    const ROWS = 3000;
    const from = Date.now();
    for (let n = 0; n < ROWS; n += 500)
      await broker.publishMany(
        "jobs",
        Array.from({ length: 500 }, (_, i) => ({ n: n + i })),
      );
    expect(await waitFor(() => started.size === ROWS, 30_000)).toBe(true);
    await sleep(300);
    const ms = Date.now() - from;
    const commits = (counts.get("claim") ?? 0) + (counts.get("settle") ?? 0) + (counts.get("publish") ?? 0);
    const reads = counts.get("observe") ?? 0;
    console.log(`${ROWS} rows in ${ms} ms: ${commits} claims, settlements and publishes, ${reads} data-version reads`);
    // Each commit changed the file; reads start at least 25 ms apart while the subscription is busy (and a few rechecks follow the last).
    expect(commits).toBeGreaterThan(50);
    expect(reads).toBeLessThanOrEqual(Math.ceil(ms / 25) + 8);
  });

  test("the watch wakes for another connection's commit and not for a commit on its own connection (the data version)", async () => {
    const url = sqlite.url();
    const table = unique("fw_version");
    const { broker } = await consumer(url, table);
    const database = brokerParts(broker).connection.require();
    const file = await databaseFile(database);
    expect(file).toBe(url.slice("sqlite:".length));
    let wakes = 0;
    const watch = new FileWatch(database, file as string, () => wakes++, silentLogger);
    await watch.start();
    stops.push(async () => watch.stop());
    const insert = (n: number) => sql`INSERT INTO ${sql.id(table)} (payload, locked_until) VALUES (${Buffer.from(JSON.stringify({ n }))}, '9999-01-01T00:00:00.000Z')`;
    for (let n = 1; n <= 5; n++) await insert(n).execute(database.db);
    await sleep(300);
    expect(wakes).toBe(0);
    const other: AnyKysely = await sqlite.connect(url);
    stops.push(() => other.destroy());
    await insert(6).execute(other);
    expect(await waitFor(() => wakes === 1, 2000)).toBe(true);
    await sleep(300);
    expect(wakes).toBe(1);
  });

  test("an in-memory database has no file: the app starts, and nothing is watched or logged about it", async () => {
    const logger = new MemoryLogger();
    const table = unique("fw_memory");
    const broker = SqlBroker.fromUrl("sqlite::memory:").route(jobsSpec(table), "jobs");
    const app = await new App({ name: "memory", version: "0", logger }).withBroker(broker, (b) => b).start();
    stops.push(() => app.stop());
    expect(logger.records.filter((r) => /database file/.test(r.message))).toEqual([]);
  });

  test("a file database: the app says at debug that it watches the file", async () => {
    const logger = new MemoryLogger();
    await consumer(sqlite.url(), unique("fw_debug"), logger);
    expect(logger.records.filter((r) => /watching the database file/.test(r.message)).map((r) => r.level)).toEqual(["debug"]);
  });
});
