/**
 * `broker.listenNotify()` on Postgres: a publish in one app wakes a subscription in another (two
 * brokers, standing in for two processes) through NOTIFY, long before its poll; so does a publish
 * from a producer process with no App whose broker has `.listenNotify()`; a publish inside a
 * rolled-back transaction wakes nobody, a committed one wakes at commit; the listening connection
 * counts in the pool budget and is taken again after it drops; other engines refuse it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { sql } from "kysely";
import pg from "pg";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, isSqlInboxError, silentLogger, subscriber, type Logger } from "../../src/index.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { channelOf } from "@sqlinbox/kysely-dialects/internal";
import { engineNamed, MYSQL_URL, PG_URL, readRows, selects, unique } from "../support/engines.js";
import { jobsSpec, type Job } from "../support/fixtures.js";
import { sleep, waitFor } from "../support/sleep.js";
import { startNotifyProducer } from "../support/notify-producer.js";

const postgres = engineNamed("postgres");

// Runs when the run selects Postgres: LISTEN/NOTIFY is Postgres's own (the other engines' refusal is tested below).
describe.runIf(selects("postgres"))("listenNotify on postgres", () => {
  let db: AnyKysely;
  const tables: string[] = [];
  const stops: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    db = await postgres.connect(PG_URL);
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    for (const t of tables.splice(0)) await postgres.dropTable(db, t);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  async function table(prefix: string): Promise<string> {
    const name = unique(prefix);
    await postgres.createLeaseTable(db, name);
    tables.push(name);
    return name;
  }

  /** App A publishes only; app B subscribes with a 30 s poll. Returns A's broker and B's deliveries. */
  async function twoApps(name: string, listen: boolean, logger: Logger = silentLogger) {
    const spec = jobsSpec(name);
    const base = (url: string) => SqlBroker.fromUrl(url, { pool: { max: 4 } });
    const brokerA = (listen ? base(PG_URL).listenNotify() : base(PG_URL)).route(spec, "jobs");
    const brokerB = (listen ? base(PG_URL).listenNotify() : base(PG_URL)).route(spec, "jobs");
    const received: Job[] = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(30_000), async (job) => void received.push(job));
    const appA = await new App({ name: "a", version: "0", logger: silentLogger }).withBroker(brokerA, (b) => b).start();
    stops.push(() => appA.stop());
    const appB = await new App({ name: "b", version: "0", logger }).withBroker(brokerB, (b) => b.include(sub)).start();
    stops.push(() => appB.stop());
    await sleep(200); // B's first claim (empty) is done: from now on only a wake or the 30 s poll claims again
    return { brokerA, received };
  }

  test("a publish in app A wakes app B's subscription (30 s poll) within a second; without listenNotify it does not", async () => {
    const notified = await twoApps(await table("ln_wake"), true);
    const t0 = Date.now();
    await notified.brokerA.publish("jobs", { n: 1 });
    expect(await waitFor(() => notified.received.length === 1, 1000)).toBe(true);
    console.log(`woken by NOTIFY in ${Date.now() - t0} ms`);
    expect(notified.received).toEqual([{ n: 1 }]);

    const polling = await twoApps(await table("ln_poll"), false);
    await polling.brokerA.publish("jobs", { n: 2 });
    expect(await waitFor(() => polling.received.length > 0, 1000)).toBe(false);
  });

  /**
   * A producer process (no App; `.listenNotify()` or not) and a consumer app here on a 30 s poll. Returns a
   * publish of the next job through the producer (resolving with the time its publish resolved there) and the
   * time each job started here.
   */
  async function producerProcess(name: string, listen: boolean) {
    const spec = jobsSpec(name);
    const started = new Map<number, number>();
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(30_000), async (job) => void started.set(job.n, Date.now()));
    const broker = SqlBroker.fromUrl(PG_URL, { pool: { max: 4 } })
      .listenNotify()
      .route(spec, "jobs");
    const app = await new App({ name: "consumer", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    stops.push(() => app.stop());
    const { publish, published } = await startNotifyProducer({ url: PG_URL, table: name, listen, connectMs: 30_000, stops });
    await sleep(300); // n: 0 woke the consumer (or did not); its claims are done: from now on only a wake or the 30 s poll claims
    return { publish, published, started };
  }

  test("a producer process with no App whose broker has .listenNotify() wakes a consumer on a 30 s poll: each job starts within 250 ms", async () => {
    const { publish, published, started } = await producerProcess(await table("ln_producer"), true);
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) {
      const n = await publish();
      expect(await waitFor(() => started.has(n), 1000)).toBe(true);
      delays.push((started.get(n) as number) - (published.get(n) as number));
      await sleep(200);
    }
    console.log(`a producer's publish started in the consumer ${delays.join(", ")} ms after it resolved`);
    // A wake, not the poll (30 s); the bound leaves room for a loaded machine (107 ms seen in a whole run).
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(250);
  });

  test("a producer process whose broker has no .listenNotify() wakes nobody: its job waits for the consumer's poll", async () => {
    const { publish, started } = await producerProcess(await table("ln_producer_quiet"), false);
    const n = await publish();
    expect(await waitFor(() => started.has(n), 1000)).toBe(false);
  });

  test("a publish { via: trx }: rolled back wakes nobody and leaves no row; committed, it wakes at commit", async () => {
    const name = await table("ln_trx");
    const { brokerA, received } = await twoApps(name, true);

    const rollback = new Error("roll back");
    await expect(
      db.transaction().execute(async (trx) => {
        await brokerA.publish("jobs", { n: 1 }, { via: trx });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await waitFor(() => received.length > 0, 700)).toBe(false);
    expect(await readRows(postgres, db, name)).toEqual([]);

    let committedAt = 0;
    await db.transaction().execute(async (trx) => {
      await brokerA.publish("jobs", { n: 2 }, { via: trx });
      await sleep(300);
      expect(received).toEqual([]); // not before the commit
      committedAt = Date.now();
    });
    expect(await waitFor(() => received.length === 1, 1000)).toBe(true);
    console.log(`woken ${Date.now() - committedAt} ms after the commit`);
    expect(received).toEqual([{ n: 2 }]);
  });

  test("the listening connection dropped: a warning, a reconnect with backoff, and NOTIFY wakes again", async () => {
    const name = await table("ln_drop");
    const logs = new MemoryLogger();
    const { brokerA, received } = await twoApps(name, true, logs);
    const channel = channelOf(name);
    const killed = await sql<{
      pid: number;
    }>`SELECT pg_terminate_backend(pid) AS ok, pid FROM pg_stat_activity WHERE query = ${`LISTEN "${channel}"`} AND pid <> pg_backend_pid()`.execute(db);
    expect(killed.rows.length).toBeGreaterThanOrEqual(1); // A's and B's listeners
    expect(await waitFor(() => logs.find("listenNotify reconnected").length === 1, 3000)).toBe(true);
    expect(logs.find("listenNotify connection lost")[0]?.level).toBe("warn");
    await sleep(300); // A's listener is back too (it logs to a silent logger)
    await brokerA.publish("jobs", { n: 3 });
    expect(await waitFor(() => received.length === 1, 1000)).toBe(true);
    expect(received).toEqual([{ n: 3 }]);
  });

  test("the listening connection counts in the pool budget: PoolTooSmall shows + 1 for listenNotify", async () => {
    const name = await table("ln_budget");
    const spec = jobsSpec(name);
    const broker = SqlBroker.fromUrl(PG_URL, { pool: { max: 1 } })
      .listenNotify()
      .route(spec, "jobs");
    const app = new App({ name: "t", version: "0", logger: silentLogger }).withBroker(broker, (b) =>
      b.include(subscriber(InboxQueue.of(spec, "jobs").workers(4), async () => undefined)),
    );
    const error = await app.start().catch((e: unknown) => e);
    expect(isSqlInboxError(error, "PoolTooSmall")).toBe(true);
    const message = (error as Error).message;
    console.log(message);
    expect(message).toContain('"jobs" (lease, workers(4)): 4 x 0 for deliveries in work + 1 for handlers, publishes and settlements = 1; 1 for listenNotify');
    expect(message).toContain("the subscriptions and listenNotify need 2");
    expect(message).toContain("total 2 > pool max 1");
  });

  test("channel names fit 63 bytes", () => {
    expect(channelOf("jobs")).toBe("sqlinbox_jobs");
    const long = channelOf("t".repeat(63));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(63);
    expect(long).not.toBe(channelOf(`${"t".repeat(62)}u`));
  });

  test("a broker from fromKysely without { listen } is refused: listenNotify needs a connection of its own", async () => {
    const name = await table("ln_kysely");
    const spec = jobsSpec(name);
    const broker = SqlBroker.fromKysely(db).listenNotify().route(spec, "jobs");
    const error = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(broker, (b) => b)
      .start()
      .catch((e: unknown) => e);
    expect(isSqlInboxError(error, "Declaration")).toBe(true);
    expect((error as Error).message).toContain(
      "listenNotify() needs a connection of its own: build the broker with SqlBroker.fromUrl, or give SqlBroker.fromKysely(db, { listen })",
    );
  });

  test("fromKysely with { listen }: a client factory in app B and a pool of its own in app A; A's publishMany wakes B (30 s poll)", async () => {
    const name = await table("ln_kysely_listen");
    const spec = jobsSpec(name);
    const dbA = await postgres.connect(PG_URL);
    const dbB = await postgres.connect(PG_URL);
    const listenPool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    stops.push(async () => {
      await dbA.destroy();
      await dbB.destroy();
      await listenPool.end();
    });
    const brokerA = SqlBroker.fromKysely(dbA, { listen: listenPool }).listenNotify().route(spec, "jobs");
    const brokerB = SqlBroker.fromKysely(dbB, { listen: () => new pg.Client({ connectionString: PG_URL }) })
      .listenNotify()
      .route(spec, "jobs");
    const received: Job[] = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(30_000).batch(10), async (job) => void received.push(job));
    const appA = await new App({ name: "a", version: "0", logger: silentLogger }).withBroker(brokerA, (b) => b).start();
    stops.push(() => appA.stop());
    const appB = await new App({ name: "b", version: "0", logger: silentLogger }).withBroker(brokerB, (b) => b.include(sub)).start();
    stops.push(() => appB.stop());
    await sleep(200); // B's first claim (empty) is done: only a wake or the 30 s poll claims again
    const listening = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = ${`LISTEN "${channelOf(name)}"`}`.execute(db);
    expect(listening.rows[0]?.n).toBe(2); // A's pool connection and B's own client
    await brokerA.publishMany("jobs", [{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await waitFor(() => received.length === 3, 1500)).toBe(true);
    expect([...received].sort((a, b) => a.n - b.n)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });
});

describe("listenNotify on other engines", () => {
  test.each([
    ["sqlite", "sqlite::memory:"],
    ["mysql", MYSQL_URL],
  ])("refused at startup on %s with UnsupportedForm naming the engine", async (engine, urlLiteral) => {
    const url: string = urlLiteral; // a URL the compiler cannot read compiles; a literal one does not (broker-engine.test-d.ts)
    const spec = jobsSpec(unique("ln_other"));
    const broker = SqlBroker.fromUrl(url).listenNotify().route(spec, "jobs");
    const app = new App({ name: "t", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => undefined)));
    const error = await app.start().catch((e: unknown) => e);
    expect(isSqlInboxError(error, "UnsupportedForm")).toBe(true);
    expect((error as Error).message).toContain(`listenNotify() needs Postgres (LISTEN/NOTIFY), and this broker is on ${engine}`);
  });
});
