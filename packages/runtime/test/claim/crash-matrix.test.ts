/**
 * The crash matrix of DESIGN §5 on every engine × form it applies to:
 * - a worker child process killed with SIGKILL mid-handler;
 * - the delivery's session killed from the server (`pg_terminate_backend`, MariaDB `KILL`).
 * Each checks when the row came back (at once, or after the lease), the attempt the next
 * delivery reads, and that no row was lost (N rows in, N settled; a duplicate only for the
 * delivery in work when killed).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { type RunningApp, SqlBroker } from "../../src/index.js";
import { deferred } from "../support/fixtures.js";
import { unique } from "../support/engines.js";
import {
  consumer,
  createJobsTable,
  deliverySession,
  dropScope,
  insertJobs,
  jobsSpecOf,
  killSession,
  matrix,
  readJobs,
  scopedUrl,
  sessionsOf,
  startWorker,
  until,
  type Seen,
} from "../support/claim-forms.js";

const LEASE_MS = 2000;
const ROWS = 3;

describe.each(matrix)("$engine.name × $form", ({ engine, form }) => {
  let base: AnyKysely;
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

  /** A table in a scope of its own: the URL its apps use, and a connection for setup and reads. */
  async function freshQueue(prefix: string) {
    const scope = unique(`sqlinbox_${prefix}`).toLowerCase();
    scopes.push(scope);
    const url = await scopedUrl(engine, base, scope);
    const db = engine.engine === "postgres" ? base : await engine.connect(url);
    if (db !== base) opened.push(db);
    const table = unique(`crash_${form}`).toLowerCase();
    await createJobsTable(engine, db, table);
    await insertJobs(db, table, ROWS);
    const ids = (await readJobs(db, table)).map((r) => r.id);
    // A second app's sessions: tagged apart on Postgres; on MariaDB the table's database is shared.
    const otherUrl = engine.engine === "postgres" ? url.replace(scope, `${scope}_b`) : url;
    return { scope, url, otherUrl, db, table, ids };
  }

  async function drainWith(url: string, table: string, db: AnyKysely) {
    const b = consumer(url, table, form, { workers: 2, leaseMs: LEASE_MS });
    const app = await b.app.start();
    running.push(app);
    await until(async () => (await readJobs(db, table)).length === 0, 15_000, "every row settled by the second app");
    await app.stop();
    return b;
  }

  function expectEachOnce(seen: readonly Seen[], ids: readonly number[]): void {
    expect(seen.map((s) => s.id).sort((x, y) => x - y)).toEqual([...ids]);
  }

  test("worker process killed with SIGKILL mid-handler", async () => {
    const { url, db, table, ids } = await freshQueue("kill9");
    const worker = startWorker({ url, table, form, workers: 1, holdMs: 60_000, leaseMs: LEASE_MS });
    const started = await worker.waitFor((l) => l.event === "start", 20_000, "first delivery");
    expect(started.attempt).toBe(1);
    // A handle in this process follows the row through the crash: in work, then (the worker gone) not yet
    // finished, then finished once the second app has run it again.
    const observer = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(jobsSpecOf(table, form), "jobs");
    const job = observer.job("jobs", started.id as number);
    // SQLite's advisory keys live in the process that holds them: from here the row reads as waiting.
    expect((await job.state()).state).toBe(engine.engine === "sqlite" && form === "advisory" ? "waiting" : "running");
    let finishedAt: number | undefined;
    const finished = job.finished({ timeoutMs: 40_000, pollMs: 50 }).then((state) => {
      finishedAt = Date.now();
      return state;
    });
    worker.child.kill("SIGKILL");
    const killedAt = Date.now();
    await worker.exited;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(finishedAt, "finished() resolved while the killed worker's row was still in the table").toBeUndefined();

    const b = await drainWith(url, table, db);
    const end = await finished.finally(() => observer.close());
    expect(end.state).toBe("gone"); // a table without processedAt: handled and deleted
    expect(finishedAt).toBeGreaterThanOrEqual(killedAt);
    expectEachOnce(b.seen, ids); // the killed delivery came back once; nothing lost
    const again = b.seen.find((s) => s.id === started.id);
    expect(again).toBeDefined();
    const after = (again?.at ?? 0) - killedAt;
    if (form === "lease") {
      // Back only when the lease expires; the crash spent the attempt.
      expect(again?.attempt).toBe(2);
      expect((again?.at ?? 0) - started.time).toBeGreaterThanOrEqual(LEASE_MS - 500);
      expect(b.seen.filter((s) => s.id !== started.id).every((s) => s.at < (again?.at ?? 0))).toBe(true);
    } else {
      // Back at once; row lock rolled the attempt back, advisory had committed it.
      expect(again?.attempt).toBe(form === "rowLock" ? 1 : 2);
      expect(after).toBeLessThan(1500);
    }
    expect(b.errors).toEqual([]);
    console.log(
      `SIGKILL ${engine.name} × ${form}: row ${started.id} back ${after} ms after the kill (${(again?.at ?? 0) - started.time} ms after its first start), attempt ${again?.attempt}`,
    );
  });

  // SQLite has no server sessions to kill: only the process crash applies there.
  if (engine.engine !== "sqlite")
    test("session killed by the server mid-handler", async () => {
      const { scope, url, otherUrl, db, table, ids } = await freshQueue("killsession");
      const release = deferred();
      const a = consumer(url, table, form, {
        workers: 1,
        leaseMs: LEASE_MS,
        handle: async () => {
          if (a.seen.length === 1) await release.promise;
        },
      });
      const appA = await a.app.start();
      running.push(appA);
      await until(() => a.seen.length === 1, 10_000, "the first delivery");
      const first = a.seen[0] as Seen;
      expect(first.attempt).toBe(1);

      let killed: number[];
      if (form === "lease") {
        killed = await sessionsOf(engine, base, scope); // nothing is held on them: kill them all
      } else {
        let session: number | undefined;
        await until(
          async () => {
            session = await deliverySession(engine, base, scope, form, `row-${first.n}`, table);
            return session !== undefined;
          },
          5000,
          "the delivery's session",
        );
        killed = [session as number];
      }
      expect(killed.length).toBeGreaterThan(0);
      let ended = 0;
      for (const s of killed) if (await killSession(engine, base, s)) ended++;
      expect(ended).toBeGreaterThan(0);
      const killedAt = Date.now();

      const b = consumer(otherUrl, table, form, { workers: 2, leaseMs: LEASE_MS });
      const appB = await b.app.start();
      running.push(appB);
      if (form === "lease") {
        // Nothing was held on the session: the lease still holds the row, so the other app
        // leaves it, and the late settlement on a new connection succeeds. (The lease form
        // may have claimed the other rows ahead; they are settled by whoever holds them.)
        await new Promise((r) => setTimeout(r, 300));
        expect(b.seen.some((s) => s.id === first.id)).toBe(false);
        release.resolve();
        await until(async () => (await readJobs(db, table)).length === 0, 10_000, "every row settled");
        expect(b.seen.some((s) => s.id === first.id)).toBe(false);
        expect(a.errors).toEqual([]);
      } else {
        // The transaction / the lock ended with the session: the row is back at once.
        await until(() => b.seen.some((s) => s.id === first.id), 5000, "the row to come back");
        const again = b.seen.find((s) => s.id === first.id) as Seen;
        expect(again.at - killedAt).toBeLessThan(1500);
        console.log(`session kill ${engine.name} × ${form}: row back ${again.at - killedAt} ms after the kill, attempt ${again.attempt}`);
        expect(again.attempt).toBe(form === "rowLock" ? 1 : 2);
        release.resolve();
        await until(() => a.errors.length > 0, 5000, "the late settlement to fail");
        expect(a.errors[0]).toMatchObject({ message: "settlement failed", code: "SessionLost" });
        await until(async () => (await readJobs(db, table)).length === 0, 10_000, "every row settled");
      }
      await appA.stop();
      await appB.stop();
      // N in, N settled: each row once, the killed one twice only where the row came back.
      const all = [...a.seen, ...b.seen].map((s) => s.id).sort((x, y) => x - y);
      expect(all).toEqual(form === "lease" ? [...ids] : [...ids, first.id].sort((x, y) => x - y));
    });
});
