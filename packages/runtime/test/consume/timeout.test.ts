/**
 * Handler timeouts (`InboxQueue.timeout(ms, { graceMs })`) on every form × engine, against real
 * servers: a handler that honours its signal settles as a throw of the `Timeout` (retried by the
 * policy, its attempt grown); one that ignores it has its row settled without it once the grace is
 * over (delivered again, then dead-lettered), its late result discarded and logged, its late
 * statements through `ctx.tx` refused, and the app still stops cleanly. `callWithin` and the
 * argument checks are tested without a database.
 */
import { describe, expect, test } from "vitest";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, Timeout, isSqlInboxError, keys, minutes, subscriber, systemClock, type Clock, type StopReport } from "../../src/index.js";
import { callWithin } from "../../src/consume/handler-timeout.js";
import { MemoryLogger } from "../../src/testing/memory-logger.js";
import { PausedClock } from "../../src/testing/paused-clock.js";
import { matrix, until } from "../support/claim-forms.js";
import { engineNamed, unique } from "../support/engines.js";
import { jobsApp, useEngineConnection } from "../support/fixtures.js";
import { TestApp } from "../../src/testing/test-app.js";
import { createTables, deadJobsOf, dropTables, groupedJobsOf, insertGrouped, readDead, readSource } from "../support/dead-letter-tables.js";

type Spec = ReturnType<typeof groupedJobsOf>;

/** One delivery as its handler saw it: when it started and ended (ms since the test began), and why its signal aborted. */
interface Run {
  readonly n: number;
  readonly attempt: number | undefined;
  readonly startedAt: number;
  endedAt?: number;
  reason?: unknown;
}

const ignoreSignal = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(matrix)("timeouts on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  /** Runs `sub` (built on a fresh jobs table with `rows` rows) until `done`; stops the app and drops the tables after. */
  async function run(
    build: (spec: Spec, dead: ReturnType<typeof deadJobsOf>, jobs: string) => object,
    done: (jobs: string, dead: string, logger: MemoryLogger) => Promise<boolean>,
    rows = 1,
  ) {
    const jobs = unique(`to_${form}`);
    const dead = unique(`to_dead_${form}`);
    await createTables(engine, db, jobs, dead);
    const spec = groupedJobsOf(jobs, form);
    const logger = new MemoryLogger();
    const app = await new App({ name: "t", version: "0", logger, shutdownGrace: 3000 })
      .withBroker(
        SqlBroker.fromUrl(url, { pool: { max: 4 } })
          .lease(2000)
          .route(spec, "jobs"),
        (b) => b.include(build(spec, deadJobsOf(dead), jobs) as never),
      )
      .start();
    let stopped: StopReport | undefined;
    let stopMs = 0;
    try {
      await insertGrouped(db, jobs, rows);
      await until(() => done(jobs, dead, logger), 20_000, "the timed deliveries to settle");
      const stopAt = Date.now();
      stopped = await app.stop();
      stopMs = Date.now() - stopAt;
      return { source: await readSource(db, jobs), moved: await readDead(db, dead), logger, stopped, stopMs, jobs };
    } finally {
      if (stopped === undefined) await app.stop();
      await dropTables(db, jobs, dead);
    }
  }

  test("a handler that honours its signal settles as a throw of the Timeout: retried by the policy, its attempt grown, without waiting for the grace", async () => {
    const t0 = Date.now();
    const runs: Run[] = [];
    const { source, moved, logger } = await run(
      (spec) =>
        subscriber(InboxQueue.of(spec, "jobs").pollInterval(50).timeout(300, { graceMs: 10_000 }), async (job, ctx) => {
          const seen: Run = { n: job.n, attempt: ctx.get(keys.attempt), startedAt: Date.now() - t0 };
          runs.push(seen);
          if (seen.attempt !== 1) return HandlerOutcome.ack();
          try {
            await ctx.sleep(60_000); // rejects with the signal's reason when it aborts
          } finally {
            seen.endedAt = Date.now() - t0;
            seen.reason = ctx.signal.reason;
          }
          return HandlerOutcome.ack();
        }),
      async (jobs) => runs.length === 2 && (await readSource(db, jobs)).length === 0,
    );
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    const [first] = runs as [Run, Run];
    const reason = first.reason;
    expect(reason).toBeInstanceOf(Timeout);
    expect(isSqlInboxError(reason, "Timeout")).toBe(true);
    expect((reason as Timeout).ms).toBe(300);
    expect((reason as Timeout).message).toMatch(/^Timeout: the delivery ran longer than its timeout of 300 ms: .* \(subscription "jobs", table "[^"]+", id \d+\)$/);
    // Aborted at the timeout, not at the grace's end (10 s).
    expect((first.endedAt as number) - first.startedAt).toBeGreaterThanOrEqual(290);
    expect((first.endedAt as number) - first.startedAt).toBeLessThan(5000);
    expect(source).toEqual([]);
    expect(moved).toEqual([]);
    const failed = logger.find("handler timed out; the row is released for another attempt");
    expect(failed).toHaveLength(1);
    expect(failed[0]?.fields).toMatchObject({ subscription: "jobs", attempt: 1, timeoutMs: 300, err: { code: "Timeout" } });
    expect(logger.find("discarded")).toEqual([]);
  });

  test("a handler that ignores its signal: its row is settled without it after the grace (delivered again, then dead-lettered), its late result discarded and logged, the app stops cleanly", async () => {
    const t0 = Date.now();
    const runs: Run[] = [];
    const hangMs = 4000;
    const { source, moved, logger, stopped, stopMs } = await run(
      (spec, dead) =>
        subscriber(InboxQueue.of(spec, "jobs").workers(1).pollInterval(50).timeout(300, { graceMs: 300 }).deadLetter(dead, { maxAttempts: 2 }), async (job, ctx) => {
          const seen: Run = { n: job.n, attempt: ctx.get(keys.attempt), startedAt: Date.now() - t0 };
          runs.push(seen);
          await ignoreSignal(hangMs);
          seen.endedAt = Date.now() - t0;
          seen.reason = ctx.signal.reason;
          return HandlerOutcome.ack(); // discarded: the row was settled without it
        }),
      async (_jobs, dead, log) => (await readDead(db, dead)).length === 1 && log.find("its result is discarded").length === 2,
    );
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    const [first, second] = runs as [Run, Run];
    // The one worker took the row again while the first handler still ran: the row was released at the grace's end.
    expect(second.startedAt).toBeLessThan(first.endedAt as number);
    expect(first.reason).toBeInstanceOf(Timeout);
    // The late acks changed nothing: the row went to the dead letter at its second attempt.
    expect(source).toEqual([]);
    expect(moved).toEqual([
      { payload: '{"n":0}', lastError: expect.stringMatching(/^SqlInboxError: Timeout: the delivery ran longer than its timeout of 300 ms/), failedAttempts: 2 },
    ]);
    const released = logger.find("handler ignored its timeout's signal past the grace");
    expect(released.map((r) => [r.fields["attempt"], r.fields["outcome"]])).toEqual([
      [1, "retryAfter"],
      [2, "deadLetter"],
    ]);
    const late = logger.find("handler ended after its timeout's grace: its result is discarded");
    expect(late.map((r) => [r.level, r.fields["attempt"], r.fields["ended"]])).toEqual([
      ["warn", 1, "returned"],
      ["warn", 2, "returned"],
    ]);
    expect(logger.find("settlement failed")).toEqual([]);
    expect(stopped?.timedOut).toBe(false);
    expect(stopMs).toBeLessThan(3000);
  });

  test("a transactional handler that ignores its signal: its late statement through ctx.tx is refused with Timeout and never written", async () => {
    const runs: Run[] = [];
    const late: unknown[] = [];
    const { source, logger } = await run(
      (spec, _dead, jobs) =>
        subscriber(InboxQueue.of(spec, "jobs").transactional().pollInterval(50).timeout(300, { graceMs: 300 }), async (job, ctx) => {
          const seen: Run = { n: job.n, attempt: ctx.get(keys.attempt), startedAt: Date.now() };
          runs.push(seen);
          if (seen.attempt !== 1) return HandlerOutcome.ack();
          await ignoreSignal(1500);
          try {
            await sql`INSERT INTO ${sql.id(jobs)} (k, grp, payload) VALUES (${"late"}, ${"late"}, ${Buffer.from("{}")})`.execute(ctx.tx);
            late.push("written");
          } catch (error) {
            late.push(error);
          }
          return HandlerOutcome.ack();
        }),
      async (jobs) => late.length === 1 && runs.length === 2 && (await readSource(db, jobs)).length === 0,
    );
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(isSqlInboxError(late[0], "Timeout")).toBe(true);
    expect((late[0] as Error).message).toContain("a statement through ctx.tx after the timeout's grace period");
    expect(source).toEqual([]); // no "late" row: the refused insert never reached the database
    expect(logger.find("handler ignored its timeout's signal past the grace")).toHaveLength(1);
  });

  test("a batch handler's timeout counts for the whole call: past its grace every row settles by the policy, the late result discarded", async () => {
    const calls: Array<{ attempts: Array<number | undefined>; reasons: unknown[] }> = [];
    const { source, moved, logger } = await run(
      (spec, dead) =>
        subscriber.batch(InboxQueue.of(spec, "jobs").batch(2).pollInterval(50).timeout(300, { graceMs: 300 }).deadLetter(dead, { maxAttempts: 2 }), async (jobs, ctx) => {
          const call = { attempts: ctx.rows.map((r) => r.get(keys.attempt)), reasons: [] as unknown[] };
          calls.push(call);
          await ignoreSignal(2500);
          call.reasons.push(ctx.signal.reason);
          return jobs.map(() => HandlerOutcome.ack());
        }),
      async (_jobs, dead, log) => (await readDead(db, dead)).length === 2 && log.find("its result is discarded").length === calls.length,
      2,
    );
    expect(calls.flatMap((c) => c.attempts).sort()).toEqual([1, 1, 2, 2]);
    expect(calls[0]?.reasons[0]).toBeInstanceOf(Timeout);
    expect(source).toEqual([]);
    expect(moved.map((m) => m.failedAttempts)).toEqual([2, 2]);
    expect(logger.find("batch handler ignored its timeout's signal past the grace").length).toBeGreaterThanOrEqual(2);
  });
});

describe.each(matrix.filter(({ form }) => form === "lease"))("timeouts on $engine.name × lease", ({ engine }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("the lease is still extended during the grace: a grace longer than the lease loses no row to another worker", async () => {
    const jobs = unique("to_grace_lease");
    const dead = unique("to_grace_dead");
    await createTables(engine, db, jobs, dead);
    const spec = groupedJobsOf(jobs, "lease");
    const logger = new MemoryLogger();
    const runs: Run[] = [];
    // A 2 s lease, extended every second; the handler ignores its signal for 3 s, inside a 5 s grace.
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(2000).workers(2).pollInterval(50).timeout(200, { graceMs: 5000 }), async (job, ctx) => {
      const seen: Run = { n: job.n, attempt: ctx.get(keys.attempt), startedAt: Date.now() };
      runs.push(seen);
      if (seen.attempt === 1) await ignoreSignal(3000);
      seen.endedAt = Date.now();
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger }).withBroker(SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "jobs"), (b) => b.include(sub)).start();
    try {
      await insertGrouped(db, jobs, 1);
      await until(async () => runs.length === 2 && (await readSource(db, jobs)).length === 0, 15_000, "the row's second delivery");
    } finally {
      await app.stop();
      await dropTables(db, jobs, dead);
    }
    const [first, second] = runs as [Run, Run];
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    // Nobody took the row while the first handler ran: its lease held through the grace.
    expect(second.startedAt).toBeGreaterThanOrEqual(first.endedAt as number);
    expect(logger.find("lease lost")).toEqual([]);
    expect(logger.find("settlement failed")).toEqual([]);
    expect(logger.find("handler timed out; the row is released for another attempt")).toHaveLength(1);
  });
});

describe.each(matrix)("a stop during a timed delivery on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("a handler that never ends is abandoned at the shutdown grace; its timeout's timers are cancelled with it", async () => {
    const jobs = unique(`to_stop_${form}`);
    const dead = unique(`to_stop_dead_${form}`);
    await createTables(engine, db, jobs, dead);
    const spec = groupedJobsOf(jobs, form);
    const timeoutMs = 60_000;
    // The system clock, counting the timers of this timeout still pending.
    const pending = new Set<object>();
    const clock: Clock = {
      now: () => systemClock.now(),
      sleep: (ms, signal) => systemClock.sleep(ms, signal),
      setTimer: (ms, fn) => {
        if (ms !== timeoutMs) return systemClock.setTimer(ms, fn);
        const token = {};
        pending.add(token);
        const timer = systemClock.setTimer(ms, () => {
          pending.delete(token);
          fn();
        });
        return {
          cancel: () => {
            pending.delete(token);
            timer.cancel();
          },
        };
      },
    };
    let started = false;
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50).timeout(timeoutMs), async () => {
      started = true;
      return new Promise<HandlerOutcome>(() => {}); // never ends, holds no timer of its own
    });
    const app = await new App({ name: "t", version: "0", logger: new MemoryLogger(), clock, shutdownGrace: 300 })
      .withBroker(
        SqlBroker.fromUrl(url, { pool: { max: 4 } })
          .lease(2000)
          .route(spec, "jobs"),
        (b) => b.include(sub),
      )
      .start();
    let report: StopReport | undefined;
    let stopMs = 0;
    try {
      await insertGrouped(db, jobs, 1);
      await until(() => started, 10_000, "the handler to start");
      expect(pending.size).toBe(1);
      const at = Date.now();
      report = await app.stop();
      stopMs = Date.now() - at;
    } finally {
      if (report === undefined) await app.stop();
      await dropTables(db, jobs, dead);
    }
    expect(pending.size).toBe(0);
    expect(stopMs).toBeLessThan(3000);
    expect(report.rolledBack + report.givenBack).toBe(1);
  });
});

describe("a timeout on a paused clock (TestApp.start)", () => {
  const sqlite = engineNamed("sqlite");

  test("minutes of a hung handler pass at once: the signal aborts at the timeout, and the row is settled at the grace's end", async () => {
    const url = sqlite.url();
    const table = unique("to_paused");
    const db = await sqlite.connect(url);
    await sqlite.createLeaseTable(db, table);
    let reason: unknown;
    const { app, sub } = jobsApp(
      url,
      table,
      async (_job, ctx) => {
        ctx.signal.addEventListener("abort", () => {
          reason = ctx.signal.reason;
        });
        return new Promise<never>(() => {});
      },
      (q) => q.timeout(minutes(5), { graceMs: minutes(1) }),
    );
    const t = await TestApp.start(app);
    try {
      await t.publish("jobs", { n: 1 });
      await t.waitFor(() => t.calls(sub).length === 1, 5000, "the delivery");
      await t.advance(minutes(5) - 1);
      expect(reason).toBeUndefined();
      await t.advance(1);
      expect(reason).toBeInstanceOf(Timeout);
      await t.advance(minutes(1) - 1);
      expect(t.calls(sub)[0]?.outcome).toBeUndefined();
      await t.advance(1);
      await t.waitFor(() => t.calls(sub)[0]?.outcome !== undefined, 5000, "the settlement without the handler");
      expect(t.calls(sub)[0]).toMatchObject({ attempt: 1, outcome: { kind: "retryAfter" }, signalAborted: true });
    } finally {
      await t.stop();
      await db.destroy();
      sqlite.cleanup();
    }
  });
});

describe("callWithin, on a paused clock", () => {
  const limit = { ms: 1000, graceMs: 500 };

  test.each([
    { name: "returns in time", endsAt: 999, ok: true, expected: { ended: "returned", value: "done" }, aborted: false, late: 0 },
    { name: "throws in time", endsAt: 10, ok: false, expected: { ended: "threw", error: "boom" }, aborted: false, late: 0 },
    { name: "returns within the grace", endsAt: 1200, ok: true, expected: { ended: "timedOut", stillRunning: false }, aborted: true, late: 0 },
    { name: "throws within the grace", endsAt: 1499, ok: false, expected: { ended: "timedOut", stillRunning: false }, aborted: true, late: 0 },
    { name: "runs past the grace", endsAt: 5000, ok: true, expected: { ended: "timedOut", stillRunning: true }, aborted: true, late: 1 },
  ])("a handler that $name", async ({ endsAt, ok, expected, aborted, late }) => {
    const clock = new PausedClock(new Date(0));
    let timedOut = false;
    const lateCalls: string[] = [];
    let end!: () => void;
    const running = new Promise<string>((resolve, reject) => {
      end = () => (ok ? resolve("done") : reject("boom"));
    });
    const hooks = {
      timedOut: () => {
        timedOut = true;
      },
      late: (ended: string) => void lateCalls.push(ended),
    };
    const call = callWithin(running, clock, limit, hooks);
    const flush = () => new Promise((r) => setImmediate(r));
    // Time moves in steps of 1 ms; the handler ends at `endsAt`.
    for (let t = 1; t <= Math.max(endsAt, 1600); t++) {
      clock.fireDue(t);
      if (t === endsAt) end();
      if (t === endsAt || t % 100 === 0) await flush();
    }
    const result = await call;
    await flush();
    expect(result).toEqual(expected);
    expect(timedOut).toBe(aborted);
    expect(lateCalls).toHaveLength(late);
    expect(clock.pending).toBe(0);
  });
});

describe("InboxQueue.timeout arguments", () => {
  const spec = groupedJobsOf("jobs", "lease");
  const queue = InboxQueue.of(spec, "reports");

  test("keeps the timeout and the grace (default: half the timeout, at most 30 s)", () => {
    expect(queue.timeout(1000).options.timeout).toEqual({ ms: 1000, graceMs: 500 });
    expect(queue.timeout(1001).options.timeout).toEqual({ ms: 1001, graceMs: 501 });
    expect(queue.timeout(600_000).options.timeout).toEqual({ ms: 600_000, graceMs: 30_000 });
    expect(queue.timeout(200, { graceMs: 0 }).options.timeout).toEqual({ ms: 200, graceMs: 0 });
    expect(queue.options.timeout).toBeUndefined();
  });

  test.each([0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "100" as unknown as number])("refuses ms = %s, naming the subscription", (ms) => {
    expect(() => queue.timeout(ms)).toThrow(`Declaration: timeout ms must be a positive whole number of ms, got ${String(ms)} (subscription "reports", table "jobs")`);
  });

  test.each([-1, 0.5, Number.NaN])("refuses graceMs = %s", (graceMs) => {
    expect(() => queue.timeout(100, { graceMs })).toThrow(
      `Declaration: timeout graceMs must be a whole number of ms, 0 or more, got ${String(graceMs)} (subscription "reports", table "jobs")`,
    );
  });
});
