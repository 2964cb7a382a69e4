/**
 * Lifecycle events and middleware (`app.on`, `app.use`) on every engine × form, against real
 * servers: each event fires once per transition, in order (ack, retry, retryAfter, a failure
 * retried then dead-lettered, a timeout, a cancel, and on the lease form a lost lease); a listener
 * that throws or hangs changes no job and holds no worker (logged once); middleware runs in
 * registration order, may swap the outcome, and its throw goes through the onError policy.
 */
import { describe, expect, test } from "vitest";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createControlTable, keys, subscriber, type JobEventName } from "../../src/index.js";
import { MemoryLogger } from "../../src/testing/memory-logger.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";
import { createTables, deadJobsOf, dropTables, readDead, readSource, retryJobsOf } from "../support/dead-letter-tables.js";

const EVENTS: readonly JobEventName[] = ["published", "started", "succeeded", "retried", "snoozed", "failed", "deadLettered", "dropped", "cancelled", "timedOut", "leaseLost"];

describe.each(matrix)("lifecycle hooks on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test("every event fires once per transition, in order; a throwing and a hanging listener change nothing", async () => {
    await createControlTable(db);
    const jobs = unique(`lc_${form}`);
    const dead = unique(`lc_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, form);
    const logger = new MemoryLogger();
    // Per id: the event names, and what the retried events carried.
    const seen = new Map<string, string[]>();
    const delays: number[] = [];
    const retries: string[] = [];
    const record = (name: string, id: unknown): void => {
      const list = seen.get(String(id)) ?? [];
      list.push(name);
      seen.set(String(id), list);
    };
    const route = unique("jobs");
    const startedIds = new Map<number, string>();
    const lease = form === "lease";
    // As in the pause and cancel tests: a key held on SQLite lives in one process, so a cancel cannot tell a row in work there.
    const cancels = !(engine.engine === "sqlite" && form === "advisory");
    let snoozes = 0;
    const snoozed: number[] = [];
    let app = new App({ name: "t", version: "0", logger, shutdownGrace: 2000 });
    for (const name of EVENTS) app = app.on(name, (e) => record(name, e.id));
    app = app
      .on("retried", (e) => {
        delays.push(e.delayMs);
        retries.push(`${e.outcome} ${e.delayMs}`);
      })
      .on("snoozed", (e) => void snoozed.push(e.delayMs))
      .on("started", (e) => void startedIds.set((e.payload as { n: number }).n, String(e.id)))
      // A listener that throws at every event (logged once), and one that never settles.
      .on("succeeded", () => {
        throw new Error("listener broke");
      })
      .on("started", () => new Promise(() => {}));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } })
      .lease(2000)
      .route(spec, route);
    const sub = subscriber(
      InboxQueue.of(spec, route)
        .workers(2)
        .pollInterval(50)
        .timeout(300, { graceMs: 2000 })
        .onError(() => HandlerOutcome.retryAfter(100))
        .deadLetter(deadJobsOf(dead), { maxAttempts: 2 }),
      async (job, ctx) => {
        const attempt = ctx.get(keys.attempt);
        switch (job.n) {
          case 2:
            return attempt === 1 ? HandlerOutcome.retryAfter(200) : HandlerOutcome.ack();
          case 3:
            throw new Error("always fails");
          case 4:
            if (attempt === 1) await ctx.sleep(60_000);
            return HandlerOutcome.ack();
          case 5:
            return attempt === 1 ? HandlerOutcome.retry() : HandlerOutcome.ack();
          case 6:
            await ctx.sleep(60_000); // until cancelled: rejects with the signal's reason
            return HandlerOutcome.ack();
          case 7:
            if (attempt === 1) {
              // Another claim's token: this delivery's lease is gone, so its ack is not written.
              await sql`UPDATE ${sql.id(jobs)} SET locked_until = ${engine.time(new Date(Date.now() + 500))} WHERE id = ${ctx.id}`.execute(db);
            }
            return HandlerOutcome.ack();
          case 8:
            // A snooze gives its attempt back, so the second delivery is attempt 1 again: counted here instead.
            snoozes++;
            return snoozes === 1 ? HandlerOutcome.snooze(150) : HandlerOutcome.ack();
          case 9:
            // A delay of 0 ms (as a backoff's jitter can give) is still a retryAfter.
            return attempt === 1 ? HandlerOutcome.retryAfter(0) : HandlerOutcome.ack();
          default:
            return HandlerOutcome.ack();
        }
      },
    );
    const running = await app.withBroker(broker, (b) => b.include(sub)).start();
    try {
      const ns = [1, 2, 3, 4, 5, ...(cancels ? [6] : []), ...(lease ? [7] : []), 8, 9];
      const ids = new Map<number, string>();
      for (const n of ns) ids.set(n, (await broker.publish(route, { n }, { columns: { k: `k${n}` } })).id);
      if (cancels) {
        await until(() => startedIds.has(6), 10_000, "job 6 to start");
        expect(await broker.cancel(route, ids.get(6) as string)).toBe("signalled");
      }
      await until(async () => (await readSource(db, jobs)).length === 0, 20_000, "every job to finish");
      await until(() => seen.get(ids.get(3) as string)?.includes("deadLettered") === true, 5000, "the dead letter's event");
      await new Promise((r) => setTimeout(r, 200));
      const of = (n: number) => seen.get(ids.get(n) as string);
      expect(of(1)).toEqual(["published", "started", "succeeded"]);
      expect(of(2)).toEqual(["published", "started", "retried", "started", "succeeded"]);
      expect(of(3)).toEqual(["published", "started", "failed", "retried", "started", "failed", "deadLettered"]);
      expect(of(4)).toEqual(["published", "started", "timedOut", "failed", "retried", "started", "succeeded"]);
      expect(of(5)).toEqual(["published", "started", "retried", "started", "succeeded"]);
      if (cancels) expect(of(6)).toEqual(["published", "started", "cancelled"]);
      if (lease) expect(of(7)).toEqual(["published", "started", "leaseLost", "started", "succeeded"]);
      expect(of(8)).toEqual(["published", "started", "snoozed", "started", "succeeded"]);
      expect(of(9)).toEqual(["published", "started", "retried", "started", "succeeded"]);
      expect(snoozed).toEqual([150]);
      expect([...delays].sort((a, b) => a - b)).toEqual([0, 0, 100, 100, 200]);
      // Job 5's retry() and job 9's retryAfter(0) both come back at once; the event tells them apart.
      expect([...retries].sort()).toEqual(["retry 0", "retryAfter 0", "retryAfter 100", "retryAfter 100", "retryAfter 200"]);
      expect(await readDead(db, dead)).toHaveLength(1);
      // The throwing listener failed at every success, and was logged once.
      expect(logger.find("a job event listener failed")).toHaveLength(1);
    } finally {
      await running.stop();
      await broker.close();
      await dropTables(db, jobs, dead);
    }
  });

  test("rows published while workers poll, retried at once and claimed again by another worker: each row's published, retried, started in order", async () => {
    const jobs = unique(`lco_${form}`);
    const dead = unique(`lco_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, form);
    const route = unique("jobs");
    const seen = new Map<string, string[]>();
    const record = (name: string, id: unknown): void => void seen.set(String(id), [...(seen.get(String(id)) ?? []), name]);
    let app = new App({ name: "t", version: "0", logger: new MemoryLogger(), shutdownGrace: 2000 });
    app = app.on("published", (e) => record("published", e.id));
    for (const name of ["started", "retried", "succeeded"] as const) app = app.on(name, (e) => record(name, e.id));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } })
      .lease(5000)
      .route(spec, route);
    const sub = subscriber(InboxQueue.of(spec, route).workers(4).pollInterval(20), async (_job, ctx) =>
      ctx.get(keys.attempt) === 1 ? HandlerOutcome.retry() : HandlerOutcome.ack(),
    );
    const running = await app.withBroker(broker, (b) => b.include(sub)).start();
    try {
      const ROWS = 40;
      for (let n = 0; n < ROWS; n++) await broker.publish(route, { n }, { columns: { k: `k${n}` } });
      await until(() => [...seen.values()].filter((events) => events.includes("succeeded")).length === ROWS, 20_000, "every row to succeed");
      for (const events of seen.values()) expect(events).toEqual(["published", "started", "retried", "started", "succeeded"]);
      expect(seen.size).toBe(ROWS);
    } finally {
      await running.stop();
      await broker.close();
      await dropTables(db, jobs, dead);
    }
  });

  test("middleware: registration order (first outermost), an outcome swapped, a throw through onError", async () => {
    const jobs = unique(`mw_${form}`);
    const dead = unique(`mw_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, form);
    const route = unique("jobs");
    const order: string[] = [];
    const seen: string[] = [];
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } })
      .lease(2000)
      .route(spec, route);
    const sub = subscriber(
      InboxQueue.of(spec, route)
        .workers(1)
        .pollInterval(50)
        .onError(() => HandlerOutcome.retryAfter(100))
        .deadLetter(deadJobsOf(dead), { maxAttempts: 3 }),
      async (job) => {
        order.push(`handler ${job.n}`);
        return job.n === 2 ? HandlerOutcome.deadLetter("handler said no") : HandlerOutcome.ack();
      },
    );
    const app = new App({ name: "t", version: "0", logger: new MemoryLogger(), shutdownGrace: 2000 })
      .withBroker(broker, (b) => b.include(sub))
      .use(async (delivery, _ctx, next) => {
        order.push("outer in");
        const outcome = await next();
        order.push("outer out");
        // Swaps the handler's dead letter for an ack.
        return delivery.kind === "row" && (delivery.payload as { n: number }).n === 2 ? HandlerOutcome.ack() : outcome;
      })
      .use(route, async (delivery, ctx, next) => {
        order.push("inner in");
        if (delivery.kind === "row" && delivery.payload.n === 3 && delivery.attempt === 1) throw new Error("middleware broke");
        if (delivery.kind === "row") expect(delivery.id).toEqual("get" in ctx ? ctx.id : undefined);
        const outcome = await next();
        order.push("inner out");
        return outcome;
      })
      .on("failed", (e) => void seen.push(`failed ${String(e.error)}`))
      .on("retried", (e) => void seen.push(`retried ${e.delayMs}`))
      .on("succeeded", () => void seen.push("succeeded"));
    const running = await app.start();
    try {
      await broker.publish(route, { n: 1 }, { columns: { k: "k1" } });
      await until(() => order.length === 5, 10_000, "job 1 to run");
      expect(order).toEqual(["outer in", "inner in", "handler 1", "inner out", "outer out"]);
      await broker.publish(route, { n: 2 }, { columns: { k: "k2" } });
      await broker.publish(route, { n: 3 }, { columns: { k: "k3" } });
      await until(async () => (await readSource(db, jobs)).length === 0, 10_000, "every job to finish");
      await until(() => seen.filter((s) => s === "succeeded").length === 3, 5000, "three successes");
      expect(await readDead(db, dead)).toEqual([]);
      expect(seen.filter((s) => s.startsWith("failed"))).toEqual(["failed Error: middleware broke"]);
      expect(seen.filter((s) => s.startsWith("retried"))).toEqual(["retried 100"]);
      // Job 3's first attempt never reached the handler: the inner middleware threw before next().
      expect(order.filter((s) => s === "handler 3")).toHaveLength(1);
    } finally {
      await running.stop();
      await broker.close();
      await dropTables(db, jobs, dead);
    }
  });

  test("a batch: its middleware sees every payload and may swap the outcomes; each row's events fire once", async () => {
    const jobs = unique(`mwb_${form}`);
    const dead = unique(`mwb_dead_${form}`);
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, form);
    const route = unique("jobs");
    const batches: number[][] = [];
    const events: string[] = [];
    const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } })
      .lease(2000)
      .route(spec, route);
    const sub = subscriber.batch(InboxQueue.of(spec, route).workers(1).batch(8).pollInterval(50), async (payloads) => payloads.map(() => HandlerOutcome.retryAfter(60_000)));
    const app = new App({ name: "t", version: "0", logger: new MemoryLogger(), shutdownGrace: 2000 })
      .withBroker(broker, (b) => b.include(sub))
      .use(route, async (delivery, _ctx, next) => {
        const handled = await next();
        if (delivery.kind !== "batch") return handled;
        batches.push(delivery.payloads.map((p) => p.n));
        expect(delivery.ids).toHaveLength(delivery.payloads.length);
        // Every row's retry becomes an ack.
        return delivery.payloads.map(() => HandlerOutcome.ack());
      })
      .on("started", (e) => void events.push(`started ${String(e.id)}`))
      .on("succeeded", (e) => void events.push(`succeeded ${String(e.id)}`))
      .on("retried", (e) => void events.push(`retried ${String(e.id)}`));
    const running = await app.start();
    try {
      for (let n = 0; n < 4; n++) await broker.publish(route, { n }, { columns: { k: `k${n}` } });
      await until(async () => (await readSource(db, jobs)).length === 0, 10_000, "every row to be acked");
      await until(() => events.length === 8, 5000, "each row's events");
      expect(batches.flat().sort()).toEqual([0, 1, 2, 3]);
      const ids = [...new Set(events.map((e) => e.split(" ")[1]))];
      expect(ids).toHaveLength(4);
      for (const id of ids) expect(events.filter((e) => e.endsWith(` ${id}`)).map((e) => e.split(" ")[0])).toEqual(["started", "succeeded"]);
    } finally {
      await running.stop();
      await broker.close();
      await dropTables(db, jobs, dead);
    }
  });
});
