/**
 * Leases on the database's clock, live on every engine: two processes on one lease table (a SQLite
 * file shared by both), one clock 60 s ahead and one 60 s behind, handlers longer than the lease;
 * neither takes a row the other holds and every row is handled once. The warning names the skew;
 * `leaseClock: "host"` refuses a skew over a quarter of the lease with `ClockSkew`. On every engine ×
 * form, an app a minute ahead or behind claims a delayed row when it comes due on the database's clock.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, createInboxTable, HandlerOutcome, InboxQueue, isSqlInboxError, minutes, SqlBroker, seconds, silentLogger, subscriber, type RunningApp } from "../../src/index.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { createJobsTable, insertJobs, matrix, readJobs, startWorker, until, type WorkerProcess } from "../support/claim-forms.js";
import { engines, readRows, unique, type TestEngine } from "../support/engines.js";
import { jobsApp, useLeaseTable } from "../support/fixtures.js";
import { SkewedClock } from "../support/skewed-clock.js";

const SKEW_MS = 60_000;
const LEASE_MS = 4_000;
const HOLD_MS = 6_000;
const ROWS = 12;

/** The server's clock now, in epoch ms. */
async function serverNow(engine: TestEngine, db: AnyKysely): Promise<number> {
  const { rows } = await db.executeQuery(dialectFor(engine.engine).schema.serverTime());
  return Number(rows[0]?.now_ms);
}

describe.each(engines)("clock skew on $name", (engine) => {
  let url: string;
  let db: AnyKysely;
  let table: string;
  const track = useLeaseTable(engine, "rt_clock", (scope) => ({ url, db, table } = scope));

  test("a process 60 s ahead and one 60 s behind share a lease table: no row is taken while held, each is handled once", async () => {
    const shared = unique("clock_two").toLowerCase();
    await createJobsTable(engine, db, shared);
    const workers: WorkerProcess[] = [];
    try {
      for (const clockSkewMs of [SKEW_MS, -SKEW_MS]) workers.push(startWorker({ url, table: shared, form: "lease", workers: 4, holdMs: HOLD_MS, leaseMs: LEASE_MS, clockSkewMs }));
      await Promise.all(workers.map((w) => w.waitFor((l) => l.event === "ready", 30_000, "ready")));
      await insertJobs(db, shared, ROWS);

      // While rows are in work, every deadline written is the database's time plus at most a lease
      // (a host clock's deadline would be a minute off one way or the other).
      await Promise.all(workers.map((w) => w.waitFor((l) => l.event === "start", 15_000, "a first delivery")));
      const now = await serverNow(engine, db);
      const held = (await readRows(engine, db, shared)).flatMap((r) => (r.locked_until === null ? [] : [r.locked_until.getTime() - now]));
      expect(held.length).toBeGreaterThan(0);
      for (const ahead of held) {
        expect(ahead).toBeGreaterThan(-LEASE_MS);
        expect(ahead).toBeLessThanOrEqual(LEASE_MS + 1_000);
      }

      await until(async () => (await readJobs(db, shared)).length === 0, 60_000, "the table to drain");
      for (const w of workers) w.child.kill("SIGTERM");
      await Promise.all(workers.map((w) => w.exited));

      const starts = workers.flatMap((w) => w.lines.filter((l) => l.event === "start").map((l) => l.n as number));
      const counts = new Map<number, number>();
      for (const n of starts) counts.set(n, (counts.get(n) ?? 0) + 1);
      expect([...counts].filter(([, c]) => c > 1)).toEqual([]);
      expect(counts.size).toBe(ROWS);
      expect(workers.flatMap((w) => w.lines.filter((l) => l.event === "error"))).toEqual([]);
      // Both took part: the one ahead holds at most its 4 workers' rows, the rest were the other's to take.
      for (const w of workers) expect(w.lines.filter((l) => l.event === "start").length).toBeGreaterThan(0);
      // Each said at startup how far off it was and what it did.
      const [ahead, behind] = workers.map((w) => w.lines.find((l) => l.event === "warn" && (l.message ?? "").includes("at startup")));
      expect(ahead?.message).toMatch(/^the host's clock is 60\.\d s ahead of the database's \(.+\), at startup: lease deadlines and due times use the database's time/);
      expect(behind?.message).toMatch(/^the host's clock is 60\.\d s behind the database's \(.+\), at startup: lease deadlines and due times use the database's time/);
      expect(Math.abs((ahead?.skewMs ?? 0) - SKEW_MS)).toBeLessThan(1_000);
      expect(Math.abs((behind?.skewMs ?? 0) + SKEW_MS)).toBeLessThan(1_000);
      console.log(`${engine.name}: ${ROWS} rows = ${workers.map((w) => w.lines.filter((l) => l.event === "start").length).join(" + ")} (60 s ahead + 60 s behind)`);
    } finally {
      for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
      await engine.dropTable(db, shared);
    }
  });

  test('leaseClock "host": a skew over a quarter of the lease refuses to start with ClockSkew, naming both times', async () => {
    const logs = new MemoryLogger();
    const { app } = jobsApp(
      url,
      table,
      async () => HandlerOutcome.ack(),
      (q) => q.lease(seconds(30)),
      { clock: new SkewedClock(SKEW_MS), leaseClock: "host", logger: logs },
    );
    let error: unknown;
    let running: RunningApp | undefined;
    try {
      running = await app.start();
    } catch (e) {
      error = e;
    }
    await running?.stop();
    expect(isSqlInboxError(error, "ClockSkew")).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/^ClockSkew: the host's clock reads \d{4}-\d\d-\d\dT[\d:.]+Z and the database's \(.+\) \d{4}-\d\d-\d\dT[\d:.]+Z: the host is 60\.\d s ahead/);
    expect(message).toContain('more than a quarter of the 30.0 s lease (7.5 s) that leaseClock "host" tolerates');
    expect(message).toContain(`(subscription "jobs", table "${table}")`);
    const [host, database] = [...message.matchAll(/\d{4}-\d\d-\d\dT[\d:.]+Z/g)].map((m) => Date.parse(m[0]));
    expect(Math.abs((host ?? 0) - (database ?? 0) - SKEW_MS)).toBeLessThan(1_000);
    expect(logs.find("app failed to start")).toHaveLength(1);
  });

  test('leaseClock "host": a skew under the quarter starts, and the warning says the host\'s clock is used as it is', async () => {
    const logs = new MemoryLogger();
    const { app } = jobsApp(
      url,
      table,
      async () => HandlerOutcome.ack(),
      (q) => q.lease(seconds(30)),
      { clock: new SkewedClock(-5_000), leaseClock: "host", logger: logs },
    );
    const running = track(await app.start());
    const [warning] = logs.find("at startup");
    expect(warning?.level).toBe("warn");
    expect(warning?.message).toMatch(
      /^the host's clock is 5\.\d s behind the database's \(.+\), at startup: leaseClock is "host": lease deadlines and due times use the host's clock as it is/,
    );
    expect(warning?.fields["leaseClock"]).toBe("host");
    await running.stop();
  });

  test("a skew that appears while running is found by the next measure, warned, and corrected: a delay is due on the database's clock", async () => {
    const logs = new MemoryLogger();
    const clock = new SkewedClock(0);
    const { app, broker } = jobsApp(
      url,
      table,
      async () => HandlerOutcome.ack(),
      (q) => q.pollInterval(50),
      { clock, logger: logs },
    );
    const running = track(await app.start());
    expect(logs.records.filter((r) => r.level === "warn")).toEqual([]);
    // The host's clock jumps a minute ahead (the next read is past the minute between measures), then is
    // stepped back two (before the last measure): each time the next read of the time measures again.
    for (const [skewMs, side] of [
      [61_000, "ahead of"],
      [-61_000, "behind"],
    ] as const) {
      const before = logs.find("measured again").length;
      clock.skewMs = skewMs;
      await until(() => logs.find("measured again").length > before, 10_000, "the clock measured again");
      const warning = logs.find("measured again").at(-1);
      expect(warning?.level).toBe("warn");
      expect(warning?.message).toMatch(
        new RegExp(`^the host's clock is 61\\.\\d s ${side} the database's \\(.+\\), measured again: lease deadlines and due times use the database's time`),
      );
      // A delay longer than the skew: a poll that read the time before the measure (its offset a minute
      // off) and runs its claim after this publish cannot take the row either way.
      const { id } = await broker.publish("jobs", { n: 1 }, { delay: minutes(5) });
      const now = await serverNow(engine, db);
      const row = (await readRows(engine, db, table)).find((r) => r.id === Number(id));
      expect(row?.locked_until, "the delayed row, unclaimed").toBeInstanceOf(Date);
      expect(Math.abs((row?.locked_until?.getTime() ?? 0) - (now + minutes(5)))).toBeLessThan(2_000);
    }
    await running.stop();
  });
});

/** A table that stores a run-at: in the lease column (lease), else in a retryAfter column; the advisory key is the id. */
function dueSpec(table: string, form: ClaimForm) {
  const columns = { id: field.id().generated(), attempt: field.attempt().generated(), payload: field.payload<{ n: number }>() };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  const withRetry = { ...columns, retryAfter: field.retryAfter("retry_after") };
  return form === "advisory" ? defineInbox({ table, columns: withRetry, advisoryLock: "due-{id}" }) : defineInbox({ table, columns: withRetry });
}

const DUE_MS = 2_000;

describe.each(matrix)("a due time on the database's clock, $engine.name × $form", ({ engine, form }) => {
  test.each([
    ["60 s ahead", SKEW_MS],
    ["60 s behind", -SKEW_MS],
  ])("an app whose clock is %s claims a row due in 2 s when it comes due, not a minute early or late", async (_side, skewMs) => {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`due_${form}`).toLowerCase();
    const spec = dueSpec(table, form);
    // The producer runs on this host's clock, corrected to the database's as every publish is (an offset near 0 here).
    const producer = SqlBroker.fromUrl(url, { pool: { max: 2 } }).route(spec, "jobs");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs");
    const started: number[] = [];
    let running: RunningApp | undefined;
    try {
      await createInboxTable(db, spec);
      const queue = InboxQueue.of(spec, "jobs").pollInterval(50);
      const app = new App({ name: "due", version: "0", logger: silentLogger, clock: new SkewedClock(skewMs) }).withBroker(broker, (b) =>
        b.include(subscriber(queue, async () => void started.push(Date.now()))),
      );
      running = await app.start();
      const published = Date.now();
      await producer.publish("jobs", { n: 1 }, { delay: DUE_MS });
      await until(() => started.length > 0, 15_000, "the row to be claimed");
      // Times are stored to the millisecond: a few ms of rounding at most.
      expect(started[0]! - published).toBeGreaterThanOrEqual(DUE_MS - 50);
      expect(started[0]! - published).toBeLessThan(DUE_MS + 5_000);
    } finally {
      await running?.stop();
      await producer.close();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
      engine.cleanup();
    }
  });
});
