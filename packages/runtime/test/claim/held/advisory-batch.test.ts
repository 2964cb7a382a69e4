/**
 * The advisory form's batch claim (`.batch(n)` above 1, on an engine whose locks live in the session):
 * one statement tries the keys of up to `n` rows on one session, one more takes them, and the rows
 * share that session until the last of them ends. It keeps every promise of the row-by-row claim:
 * - a batch never holds two rows of one key: while a row runs, it is the only row of its key whose
 *   attempt was counted and that is still in the table, and each key's rows run in id order;
 * - attempts are exact: rows that always fail, read by two apps, are delivered attempts 1, 2, 3;
 * - the session ends everything at once: killed from the server, every key of its batch is free,
 *   every row comes back (attempt spent), and the late settlements fail with `SessionLost`.
 * SQLite keeps its keys in the process and claims row by row; the first two run there too.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import type { RunningApp } from "../../../src/index.js";
import { consumer, createJobsTable, deliverySession, dropScope, insertJobs, killSession, readJobs, scopedUrl, serverEngines, until, type Seen } from "../../support/claim-forms.js";
import { engines, unique } from "../../support/engines.js";
import { deferred, useEngineConnection } from "../../support/fixtures.js";
import { exactAttempts } from "./attempts-scenario.js";

const ROWS = 200;
const KEYS = 10;

describe.each(engines)("advisory batch claim on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test(`batch(16).workers(8), ${ROWS} rows over ${KEYS} keys: a running row is the only counted row of its key; keys in id order`, async () => {
    const table = unique("adv_batch_keys");
    await createJobsTable(engine, db, table);
    await insertJobs(db, table, ROWS, (n) => `key-${n % KEYS}`);
    const orderByKey = new Map<string, number[]>();
    /** Rows of the running row's key that a take counted (attempt ≥ 2: the column starts at 1) and that are still in the table, other than it. */
    const countedBeside: string[] = [];
    let largestClaim = 0;
    const c = consumer(url, table, "advisory", {
      workers: 8,
      batch: 16,
      handle: async (seen) => {
        const key = `key-${seen.n % KEYS}`;
        orderByKey.set(key, [...(orderByKey.get(key) ?? []), seen.id]);
        const { rows } = await sql<{ id: number }>`SELECT id FROM ${sql.id(table)} WHERE k = ${key} AND attempt >= 2 AND id <> ${seen.id}`.execute(db);
        for (const row of rows) countedBeside.push(`${key}: row ${row.id} counted while row ${seen.id} ran`);
        await new Promise((r) => setTimeout(r, 2));
      },
    });
    const app = await c.app
      .on("claimed", (event) => {
        largestClaim = Math.max(largestClaim, event.rows);
      })
      .start();
    try {
      await until(async () => c.seen.length >= ROWS && (await readJobs(db, table)).length === 0, 30_000, "every row settled");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    expect(countedBeside).toEqual([]);
    expect(c.seen).toHaveLength(ROWS);
    for (const [, ids] of orderByKey) expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(orderByKey.size).toBe(KEYS);
    // The claims took several rows each (one per key at most): the batch path ran.
    expect(largestClaim).toBeGreaterThan(1);
    expect(largestClaim).toBeLessThanOrEqual(KEYS);
    expect(c.errors).toEqual([]);
  });

  test(
    "batch(8), 200 rows that always throw, maxAttempts 3, two apps: each row delivered 3 times, attempts 1, 2, 3",
    () => exactAttempts(engine, db, url, { prefix: "adv_batch_attempts", batch: 8 }),
    120_000,
  );
});

describe.each(serverEngines)("advisory batch session killed on $name", (engine) => {
  let base!: AnyKysely;
  const opened: AnyKysely[] = [];
  const scopes: string[] = [];
  const running: RunningApp[] = [];
  beforeAll(async () => {
    base = await engine.connect(engine.url());
  });
  afterAll(async () => {
    for (const app of running.splice(0)) await app.stop().catch(() => {});
    for (const db of opened.splice(0)) await db.destroy().catch(() => {});
    for (const scope of scopes.splice(0)) await dropScope(engine, base, scope).catch(() => {});
    await base.destroy();
    engine.cleanup();
  });

  test("a stop with rows of a batch still waiting for a worker: they give their attempt back and their keys are free; the row in work settles", async () => {
    const scope = unique("sqlinbox_advstop").toLowerCase();
    scopes.push(scope);
    const url = await scopedUrl(engine, base, scope);
    const db = engine.engine === "postgres" ? base : await engine.connect(url);
    if (db !== base) opened.push(db);
    const table = unique("adv_batch_stop").toLowerCase();
    await createJobsTable(engine, db, table);
    const rows = 6;
    await insertJobs(db, table, rows);
    const ids = (await readJobs(db, table)).map((r) => r.id);
    const release = deferred();
    const a = consumer(url, table, "advisory", { workers: 1, batch: 8, handle: () => release.promise });
    const app = await a.app.start();
    running.push(app);
    await until(() => a.seen.length === 1, 10_000, "the first delivery");
    const first = a.seen[0] as Seen;
    // One claim took every row: each counted once, the five behind the first waiting for the one worker.
    expect((await readJobs(db, table)).map((r) => r.attempt)).toEqual(ids.map(() => 2));
    const stopped = app.stop();
    await new Promise((r) => setTimeout(r, 100));
    release.resolve();
    await stopped;
    const left = await readJobs(db, table);
    expect(left.map((r) => r.id)).toEqual(ids.filter((id) => id !== first.id));
    expect(left.map((r) => r.attempt)).toEqual(left.map(() => 1)); // given back: never counted
    expect(await Promise.all(ids.map((_, n) => deliverySession(engine, base, scope, "advisory", `row-${n}`, table)))).toEqual(ids.map(() => undefined));
    expect(a.seen).toHaveLength(1);
    expect(a.errors).toEqual([]);
  });

  test("the batch's session killed by the server: every key of the batch free at once, every row back with its attempt spent, late settlements fail, rows not started are not run", async () => {
    const scope = unique("sqlinbox_advbatch").toLowerCase();
    scopes.push(scope);
    const url = await scopedUrl(engine, base, scope);
    const db = engine.engine === "postgres" ? base : await engine.connect(url);
    if (db !== base) opened.push(db);
    const table = unique("adv_batch_kill").toLowerCase();
    await createJobsTable(engine, db, table);
    const rows = 6;
    await insertJobs(db, table, rows);
    const ids = (await readJobs(db, table)).map((r) => r.id);
    const release = deferred();
    // The first two rows wait for the test; each later one runs a second, long enough for the loss to be known.
    let calls = 0;
    const a = consumer(url, table, "advisory", { workers: 2, batch: 8, handle: () => (++calls <= 2 ? release.promise : new Promise((r) => setTimeout(r, 1000))) });
    const appA = await a.app.start();
    running.push(appA);
    await until(() => a.seen.length === 2, 10_000, "two deliveries in work");
    // One claim took every row (one key each) on one session: two in work, four waiting for a worker.
    const first = a.seen[0] as Seen;
    let session: number | undefined;
    await until(
      async () => {
        session = await deliverySession(engine, base, scope, "advisory", `row-${first.n}`, table);
        return session !== undefined;
      },
      5000,
      "the batch's session",
    );
    const holders = await Promise.all(ids.map((_, n) => deliverySession(engine, base, scope, "advisory", `row-${n}`, table)));
    expect(holders).toEqual(ids.map(() => session));
    expect((await readJobs(db, table)).map((r) => r.attempt)).toEqual(ids.map(() => 2)); // each counted once by the take

    await killSession(engine, base, session as number);
    const killedAt = Date.now();
    await until(
      async () => (await Promise.all(ids.map((_, n) => deliverySession(engine, base, scope, "advisory", `row-${n}`, table)))).every((s) => s === undefined),
      2000,
      "every key of the batch free",
    );
    const freedMs = Date.now() - killedAt;

    const otherUrl = engine.engine === "postgres" ? url.replace(scope, `${scope}_b`) : url;
    const b = consumer(otherUrl, table, "advisory", { workers: 4, batch: 8 });
    const appB = await b.app.start();
    running.push(appB);
    await until(async () => (await readJobs(db, table)).length === 0, 10_000, "every row settled by the other app");
    expect(b.seen.map((s) => s.id).sort((x, y) => x - y)).toEqual(ids);
    expect(b.seen.map((s) => s.attempt)).toEqual(ids.map(() => 2));
    release.resolve();
    // The two rows in work settle on the dead session: each fails, and shows the session ended. Their workers were
    // free at once (the batch's writes do not hold a worker), so two more rows started before that was known: they
    // run and fail too. The last two (already run by the other app) are not started here.
    await until(() => a.errors.length === 4, 10_000, "four late settlements to fail");
    await new Promise((r) => setTimeout(r, 1500));
    expect(a.seen).toHaveLength(4);
    expect(a.errors).toHaveLength(4);
    expect(a.errors.every((e) => e.message === "settlement failed" && e.code === "SessionLost")).toBe(true);
    await appA.stop();
    await appB.stop();
    console.log(`advisory batch session kill on ${engine.name}: ${rows} keys free ${freedMs} ms after the kill`);
  });
});
