/**
 * Three MariaDB Galera nodes (`scripts/services.sh galera`: 3307, 3308, 3309, wsrep on), with
 * workers connected to different nodes:
 * - startup detects the cluster (`wsrep_on`, `wsrep_cluster_size`) and says in its log what it
 *   decided; the row-lock and advisory forms are refused there with `UnsupportedForm`;
 * - the row-lock claim measured across two nodes, as the statements it sends (a transaction,
 *   `FOR UPDATE SKIP LOCKED`, then the delete and the commit): how often both nodes took the same row;
 * - the lease form, one app per node: every row delivered exactly once; certification failures at
 *   commit (error 1213) retried as deadlocks;
 * - a node killed (SIGKILL) mid-drain, on a quiet machine and with two busy processes beside the
 *   test: every row handled, none stuck, and `stop()` within its grace even for the app whose node is
 *   gone. The other nodes stall commits until they declare the node gone (`evs.suspect_timeout`, 3 s
 *   here); a lease shorter than that stall runs out, and its row is delivered again: every row
 *   delivered twice must have lost its first lease (`LeaseLost` logged, or the lease's loss warned).
 *   Under load a claim can return after the deadline it wrote: its rows are not started.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { App, InboxQueue, SqlBroker, subscriber, HandlerOutcome } from "../../src/index.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { consumer, createJobsTable, insertJobs, jobsSpecOf, until } from "../support/claim-forms.js";
import { engines, unique } from "../support/engines.js";
import { GALERA_URLS, services } from "./services.js";

const mariadb = engines.find((e) => e.engine === "mysql");
if (mariadb === undefined) throw new Error("no MariaDB engine");
const maria = mariadb;
const [NODE1, NODE2] = GALERA_URLS as [string, string];
const GRACE_MS = 3000;

const open = async (url: string, max = 2): Promise<AnyKysely> => (await parseDatabaseUrl(url).open({ max })).db;
const count = async (db: AnyKysely, table: string): Promise<number> => Number((await sql<{ n: string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db)).rows[0]?.n);

let node1: AnyKysely;
beforeAll(async () => {
  await services("galera");
  node1 = await open(NODE1);
}, 240_000);
afterAll(async () => {
  await node1?.destroy();
});

test("startup detects the cluster, logs its decision, and refuses the row-lock and advisory forms", async () => {
  const table = unique("gal_refuse").toLowerCase();
  await createJobsTable(maria, node1, table);
  try {
    for (const form of ["rowLock", "advisory"] as const) {
      const c = consumer(NODE2, table, form);
      await expect(c.app.start()).rejects.toMatchObject({ code: "UnsupportedForm", message: expect.stringMatching(/node of a Galera cluster \(wsrep_on, 3 nodes\)/) });
    }
    const logger = new MemoryLogger();
    const spec = jobsSpecOf(table, "lease");
    const app = await new App({ name: "t", version: "0", logger })
      .withBroker(SqlBroker.fromUrl(NODE2).route(spec, "jobs"), (b) => b.include(subscriber(InboxQueue.of(spec, "jobs"), async () => HandlerOutcome.ack())))
      .start();
    await app.stop();
    const decided = logger.find("a node of a Galera cluster")[0];
    expect(decided?.fields).toMatchObject({ cluster: "Galera", nodes: 3 });
    console.log(`galera startup log: ${decided?.message}`);
  } finally {
    await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(node1);
  }
});

test("the row-lock claim across two nodes: how often both take the same row", { timeout: 120_000 }, async () => {
  const ROWS = 200;
  const table = unique("gal_rowlock").toLowerCase();
  await createJobsTable(maria, node1, table);
  await insertJobs(node1, table, ROWS);
  const claimed: Array<Map<number, number>> = [new Map(), new Map()];
  let certificationFailures = 0;
  const worker = async (url: string, mine: Map<number, number>) => {
    const db = await open(url, 1);
    try {
      for (;;) {
        let id: number | undefined;
        try {
          await db.connection().execute(async (conn) => {
            await sql`SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED`.execute(conn);
            await sql`START TRANSACTION`.execute(conn);
            try {
              const row = (await sql<{ id: number }>`SELECT id FROM ${sql.id(table)} ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`.execute(conn)).rows[0];
              if (row === undefined) {
                await sql`ROLLBACK`.execute(conn);
                return;
              }
              id = Number(row.id);
              mine.set(id, (mine.get(id) ?? 0) + 1); // the handler would run now
              await new Promise((r) => setTimeout(r, 5));
              await sql`DELETE FROM ${sql.id(table)} WHERE id = ${id}`.execute(conn);
              await sql`COMMIT`.execute(conn);
            } catch (error) {
              await sql`ROLLBACK`.execute(conn).catch(() => {});
              throw error;
            }
          });
        } catch (error) {
          if ((error as { errno?: number }).errno === 1213) {
            certificationFailures++;
            continue;
          }
          throw error;
        }
        if (id === undefined) return;
      }
    } finally {
      await db.destroy();
    }
  };
  try {
    await Promise.all([worker(NODE1, claimed[0] as Map<number, number>), worker(NODE2, claimed[1] as Map<number, number>)]);
    await until(async () => (await count(node1, table)) === 0, 10_000, "the table empty");
    const both = [...(claimed[0]?.keys() ?? [])].filter((id) => claimed[1]?.has(id)).length;
    console.log(
      `galera row lock across two nodes: ${ROWS} rows, ${both} taken on both nodes at once (both handlers ran), ${certificationFailures} commits failed certification (1213); node 1 took ${claimed[0]?.size}, node 2 ${claimed[1]?.size}`,
    );
    expect((claimed[0]?.size ?? 0) + (claimed[1]?.size ?? 0) - both).toBe(ROWS);
  } finally {
    await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(node1);
  }
});

test("the lease form, one app per node: every row delivered exactly once; certification failures retried", { timeout: 120_000 }, async () => {
  const ROWS = 800;
  const table = unique("gal_lease").toLowerCase();
  await createJobsTable(maria, node1, table);
  await insertJobs(node1, table, ROWS);
  const apps = GALERA_URLS.map((url) => consumer(url, table, "lease", { workers: 4, batch: 8, leaseMs: 10_000, handle: () => new Promise((r) => setTimeout(r, 2)) }));
  const running = await Promise.all(apps.map((c) => c.app.start()));
  try {
    const started = Date.now();
    await until(async () => (await count(node1, table)) === 0, 90_000, "every row handled");
    const ms = Date.now() - started;
    const seen = apps.flatMap((c) => c.seen);
    const retried = apps.reduce((n, c) => n + c.warnings.filter((w) => w === "deadlock retried").length, 0);
    console.log(
      `galera lease, one app per node: ${ROWS} rows in ${ms} ms, ${seen.length - new Set(seen.map((s) => s.id)).size} delivered twice; per node ${apps.map((c) => c.seen.length).join("/")}; ${retried} certification failures retried; errors ${apps.reduce((n, c) => n + c.errors.length, 0)}`,
    );
    expect(new Set(seen.map((s) => s.id)).size).toBe(ROWS);
    expect(seen.length).toBe(ROWS);
    for (const c of apps) expect(c.errors).toEqual([]);
  } finally {
    for (const app of running) await app.stop();
    await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(node1);
  }
});

/** Processes that keep every core busy beside the test: a loaded machine, where claims and settlements stall. */
function busyLoops(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
}

test.each([
  { load: "quiet", busy: 0 },
  { load: "loaded (two busy processes beside it)", busy: 2 },
])("a node killed mid-drain, $load: every row handled, none stuck, stop() within its grace", { timeout: 300_000 }, async ({ busy }) => {
  const ROWS = 800;
  const LEASE_MS = 2000;
  const table = unique("gal_down").toLowerCase();
  await createJobsTable(maria, node1, table);
  await insertJobs(node1, table, ROWS);
  const apps = GALERA_URLS.map((url) =>
    consumer(url, table, "lease", { workers: 4, batch: 8, leaseMs: LEASE_MS, shutdownGrace: GRACE_MS, handle: () => new Promise((r) => setTimeout(r, 5)) }),
  );
  const running = await Promise.all(apps.map((c) => c.app.start()));
  const loops = busyLoops(busy);
  try {
    await until(() => apps.reduce((n, c) => n + c.seen.length, 0) >= ROWS / 5, 30_000, "the drain under way");
    const killedAt = Date.now();
    await services("galera-kill-node-3");
    const leftAtKill = await count(node1, table);
    // None stuck: the rows left keep going down (on a loaded machine slowly); 30 s without one handled fails.
    let left = leftAtKill;
    let movedAt = Date.now();
    await until(
      async () => {
        const now = await count(node1, table);
        if (now < left) [left, movedAt] = [now, Date.now()];
        if (Date.now() - movedAt > 30_000) throw new Error(`${left} rows left, none handled for 30 s after the node went down`);
        return now === 0;
      },
      150_000,
      "every row handled after the node went down",
    );
    const drainedMs = Date.now() - killedAt;
    const stopStarted = Date.now();
    await Promise.all(running.map((app) => app.stop()));
    const stopMs = Date.now() - stopStarted;
    const seen = apps.flatMap((c) => c.seen);
    const distinct = new Set(seen.map((s) => s.id)).size;
    console.log(
      `galera node 3 killed mid-drain: ${leftAtKill} rows left at the kill, all handled ${drainedMs} ms later; ${ROWS} rows, ${seen.length - distinct} delivered twice; per node ${apps.map((c) => c.seen.length).join("/")}; stop() ${stopMs} ms`,
    );
    expect(distinct).toBe(ROWS);
    expect(stopMs).toBeLessThan(GRACE_MS + 2000);
    // Exactly once per lease: a row comes twice only when an app that had it was told it no longer held it: node 3's
    // app (its node went down with the lease), a settlement that failed with LeaseLost, or the keeper's warning that
    // the lease was lost (its extensions could not run while the cluster reformed). The app told may be the later of
    // the two deliveries (a row claimed ahead that started late). A row delivered twice with no app told is a bug.
    const twice = [...new Set(seen.map((s) => s.id))].filter((id) => seen.filter((s) => s.id === id).length > 1);
    apps.forEach((c, i) => {
      const codes = new Map<string, number>();
      for (const e of c.errors) {
        const key = `${e.message}${e.code === undefined ? "" : ` (${String(e.code)})`}`;
        codes.set(key, (codes.get(key) ?? 0) + 1);
      }
      const lost = new Map<string, number>();
      for (const w of c.warnings) if (w.startsWith("lease lost")) lost.set(w, (lost.get(w) ?? 0) + 1);
      console.log(`node ${i + 1}'s app logged: ${[...codes].map(([k, n]) => `${n}x ${k}`).join("; ")}; warned: ${[...lost].map(([k, n]) => `${n}x ${k}`).join("; ")}`);
    });
    const firstBy = (id: number) => apps.findIndex((c) => c.seen.some((s) => s.id === id && s.at === Math.min(...seen.filter((x) => x.id === id).map((x) => x.at))));
    const told = (id: number, c: (typeof apps)[number]) => c.errors.some((e) => Number(e.id) === id) || c.leasesLost.has(id);
    const unexplained = twice.filter((id) => !apps.some((c, i) => c.seen.some((x) => x.id === id) && (i === 2 || told(id, c))));
    const toldFirst = twice.filter((id) => firstBy(id) !== 2 && told(id, apps[firstBy(id)]!)).length;
    console.log(
      `twice: ${twice.length}; first delivered on node 3: ${twice.filter((id) => firstBy(id) === 2).length}; the first app told it lost the lease: ${toldFirst}; only a later one told: ${twice.length - unexplained.length - toldFirst - twice.filter((id) => firstBy(id) === 2).length}; unexplained: ${unexplained.join(",")}`,
    );
    for (const id of unexplained)
      console.log(
        `unexplained ${id}: ${apps
          .flatMap((c, i) => c.seen.filter((x) => x.id === id).map((x) => `node ${i + 1} at ${x.at} attempt ${x.attempt}`))
          .join("; ")}; errors: ${apps.flatMap((c, i) => c.errors.filter((e) => Number(e.id) === id).map((e) => `node ${i + 1} ${e.message} ${String(e.code)}`)).join("; ")}`,
      );
    expect(unexplained).toEqual([]);
  } finally {
    for (const loop of loops) loop.kill("SIGKILL");
    for (const app of running) await app.stop().catch(() => {});
    await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(node1).catch(() => {});
    await services("galera"); // node 3 rejoins
  }
});
