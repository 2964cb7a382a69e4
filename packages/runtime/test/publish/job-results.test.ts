/**
 * Results and progress on every engine × form, against real servers: a handler's result is
 * written with its ack (`ctx.ack(result)`), and `finished()` on a second broker resolves with it,
 * typed; on the lease form a lease lost mid-handler leaves no result (nor the ack); progress
 * (`ctx.progress(value)`) shows through a handle on another pool while the row is in work, on the
 * lease and advisory forms. On SQLite the handle reads through the app's broker (one SQLite file
 * serves one process, whose registry holds the advisory keys).
 */
import { column, InboxSpec, payloadOf, progressOf, resultOf } from "@sqlinbox/core";
import type { ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, expectTypeOf, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";
import { useJobTables } from "../support/fixtures.js";

interface Job {
  readonly n: number;
}
interface Report {
  readonly url: string;
  readonly pages: number;
}
interface Step {
  readonly done: number;
  readonly of: number;
}

function specOf(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .data(column("k").type("text"))
    .payload(column("payload"), payloadOf<Job>())
    .processedAt(column("processed_at"))
    .result(column("result"), resultOf<Report>())
    .progress(column("progress"), progressOf<Step>());
  if (form === "lease") return base.lease(column("locked_until"));
  if (form === "advisory") return base.advisoryLock("{k}");
  return base;
}

/** A gate per job the handler waits on (or its signal), and what the handler saw. */
class Gates {
  readonly #open = new Map<number, () => void>();
  readonly started = new Set<number>();
  readonly settled = new Map<number, "ok" | unknown>();
  wait(n: number, signal: AbortSignal): Promise<void> {
    this.started.add(n);
    return new Promise((resolve) => {
      this.#open.set(n, resolve);
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }
  open(n: number): void {
    this.#open.get(n)?.();
  }
}

/** A lease deadline an hour ahead, in the column's own form: what another claim's stamp looks like. */
function stolenLease(engine: TestEngine): string {
  const at = new Date(Date.now() + 3_600_000);
  if (engine.engine === "sqlite") return at.toISOString();
  if (engine.engine === "postgres") return at.toISOString();
  return at.toISOString().replace("T", " ").replace("Z", "");
}

// A route of this run alone: cancels are recorded by route and id in the shared control table, so another
// test's cancel of "jobs" id 1 would read here as this job's.
const ROUTE = `results_${process.pid}_${Date.now()}`;

describe.each(matrix)("results and progress on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  const { tables, closers } = useJobTables(engine, (connected) => {
    ({ db, url } = connected);
  });

  async function setup(options: { progress?: boolean; lease?: number } = {}) {
    const table = unique(`res_${form}`).toLowerCase();
    tables.push(table);
    const spec = specOf(table, form);
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, ROUTE);
    const observer = engine.engine === "sqlite" ? broker : SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, ROUTE);
    closers.push(
      () => broker.close(),
      () => observer.close(),
    );
    const gates = new Gates();
    const queue = InboxQueue.of(spec, ROUTE)
      .pollInterval(50)
      .workers(4)
      .onError(() => ({ kind: "retry" }));
    const leased = form === "lease" ? (queue as InboxQueue<ReturnType<typeof specOf>>) : queue;
    const sub = subscriber(leased, async (job, ctx) => {
      if (options.progress === true) await (ctx as unknown as { progress(v: Step): Promise<void> }).progress({ done: job.n, of: 10 });
      await gates.wait(job.n, ctx.signal);
      return ctx.ack({ url: `/reports/${job.n}`, pages: job.n * 2 } as never);
    });
    const app = await new App({ name: "results", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    closers.push(() => app.stop());
    return { table, spec, broker, observer, gates, app };
  }

  async function rowOf(table: string, id: string): Promise<Record<string, unknown>> {
    const { rows } = await sql<Record<string, unknown>>`SELECT * FROM ${sql.id(table)} WHERE id = ${Number(id)}`.execute(db);
    return rows[0] ?? {};
  }

  test("the ack writes the result; finished() on a second broker resolves with it, typed", async () => {
    const { broker, observer, gates } = await setup();
    const published = await broker.publish(ROUTE, { n: 3 }, { columns: { k: "a" } });
    const job = observer.job(ROUTE, published);
    expect(await job.state()).toMatchObject({ result: null, progress: null });
    await until(() => gates.started.has(3), 10_000, "the handler to start");
    expect(await job.state()).toMatchObject({ state: "running", result: null });
    const finished = job.finished({ pollMs: 30, timeoutMs: 10_000 });
    gates.open(3);
    const end = await finished;
    expect(end.state).toBe("done");
    if (end.state !== "done") throw new Error("not done");
    expectTypeOf(end.result).toEqualTypeOf<Report | null>();
    expect(end.result).toEqual({ url: "/reports/3", pages: 6 });
    expect(end.processedAt).toBeInstanceOf(Date);
  });

  test("a result that is a JSON string's text reads back as written", async () => {
    // Written straight into the column, as another language would: a string result stays a string.
    const { table, broker, observer, gates } = await setup();
    const published = await broker.publish(ROUTE, { n: 100 }, { columns: { k: "b" } });
    await until(() => gates.started.has(100), 10_000, "the handler to start");
    gates.open(100);
    await observer.job(ROUTE, published).finished({ pollMs: 30, timeoutMs: 10_000 });
    await sql`UPDATE ${sql.id(table)} SET result = ${JSON.stringify("42")} WHERE id = ${Number(published.id)}`.execute(db);
    expect(await observer.job(ROUTE, published).state()).toMatchObject({ result: "42" });
  });

  if (form === "lease") {
    test("a lease lost mid-handler writes no result, and no ack", async () => {
      const { table, broker, observer, gates } = await setup();
      const published = await broker.publish(ROUTE, { n: 5 }, { columns: { k: "c" } });
      await until(() => gates.started.has(5), 10_000, "the handler to start");
      // Another claim takes the row: its lease token is no longer this delivery's.
      await sql`UPDATE ${sql.id(table)} SET locked_until = ${stolenLease(engine)} WHERE id = ${Number(published.id)}`.execute(db);
      gates.open(5);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const row = await rowOf(table, published.id);
      expect(row["result"]).toBeNull();
      expect(row["processed_at"]).toBeNull();
      expect((await observer.job(ROUTE, published).state()).state).toBe("running");
    });
  }

  test("a batch handler gives one result per row, each written with its own ack", async () => {
    const table = unique(`resb_${form}`).toLowerCase();
    tables.push(table);
    const spec = specOf(table, form);
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, ROUTE);
    closers.push(() => broker.close());
    const published = await broker.publishMany(
      ROUTE,
      [1, 2, 3, 4].map((n) => ({ n })),
      { columns: { k: "x" } },
    );
    const batch = InboxQueue.of(spec as ReturnType<typeof specOf>, ROUTE)
      .batch(4)
      .pollInterval(50);
    const sub = subscriber.batch(batch, async (jobs, ctx) =>
      jobs.map((job, i) => (job.n === 4 ? undefined : (ctx.rows[i] as unknown as { ack(r: Report): never }).ack({ url: `/b/${job.n}`, pages: job.n }))),
    );
    const app = await new App({ name: "results-batch", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    closers.push(() => app.stop());
    const ends = await Promise.all(published.map((p) => broker.job(ROUTE, p).finished({ pollMs: 30, timeoutMs: 10_000 })));
    expect(ends.map((e) => (e.state === "done" ? e.result : "not done"))).toEqual([{ url: "/b/1", pages: 1 }, { url: "/b/2", pages: 2 }, { url: "/b/3", pages: 3 }, null]);
  });

  test("a transactional handler's result commits with its writes and the ack", async () => {
    const table = unique(`rest_${form}`).toLowerCase();
    const side = `${table}_side`;
    tables.push(table, side);
    const spec = specOf(table, form);
    await createInboxTable(db, spec);
    await sql`CREATE TABLE ${sql.id(side)} (n INTEGER NOT NULL)`.execute(db);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, ROUTE);
    closers.push(() => broker.close());
    const queue = InboxQueue.of(spec as ReturnType<typeof specOf>, ROUTE)
      .pollInterval(50)
      .transactional();
    const sub = subscriber(queue, async (job, ctx) => {
      await sql`INSERT INTO ${sql.id(side)} (n) VALUES (${job.n})`.execute(ctx.tx);
      if (form !== "rowLock") await (ctx as unknown as { progress(v: Step): Promise<void> }).progress({ done: 1, of: 1 });
      return (ctx as unknown as { ack(r: Report): never }).ack({ url: `/t/${job.n}`, pages: 1 });
    });
    const app = await new App({ name: "results-tx", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    closers.push(() => app.stop());
    const published = await broker.publish(ROUTE, { n: 11 }, { columns: { k: "t" } });
    const end = await broker.job(ROUTE, published).finished({ pollMs: 30, timeoutMs: 10_000 });
    expect(end).toMatchObject({ state: "done", result: { url: "/t/11", pages: 1 } });
    if (form !== "rowLock") expect(end).toMatchObject({ progress: { done: 1, of: 1 } });
    const { rows } = await sql<{ n: number }>`SELECT n FROM ${sql.id(side)}`.execute(db);
    expect(rows.map((r) => Number(r.n))).toEqual([11]);
  });

  if (form === "lease") {
    test("progress is fenced by the lease: once another claim holds the row, ctx.progress rejects and writes nothing", async () => {
      const table = unique("resp_lease").toLowerCase();
      tables.push(table);
      const spec = specOf(table, form);
      await createInboxTable(db, spec);
      const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, ROUTE);
      closers.push(() => broker.close());
      const gates = new Gates();
      const outcomes: unknown[] = [];
      const sub = subscriber(InboxQueue.of(spec as ReturnType<typeof specOf>, ROUTE).pollInterval(50), async (job, ctx) => {
        const progress = (ctx as unknown as { progress(v: Step): Promise<void> }).progress;
        await progress.call(ctx, { done: 1, of: 2 });
        await gates.wait(job.n, ctx.signal);
        outcomes.push(
          await progress.call(ctx, { done: 2, of: 2 }).then(
            () => "written",
            (error: unknown) => (error as { code?: string }).code,
          ),
        );
        return ctx.ack({ url: "/never", pages: 0 } as never);
      });
      const app = await new App({ name: "results-progress", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
      closers.push(() => app.stop());
      const published = await broker.publish(ROUTE, { n: 9 }, { columns: { k: "p" } });
      await until(() => gates.started.has(9), 10_000, "the handler to start");
      await sql`UPDATE ${sql.id(table)} SET locked_until = ${stolenLease(engine)} WHERE id = ${Number(published.id)}`.execute(db);
      gates.open(9);
      await until(() => outcomes.length === 1, 10_000, "the handler's second progress");
      expect(outcomes).toEqual(["LeaseLost"]);
      const row = await rowOf(table, published.id);
      const progress = row["progress"];
      expect(typeof progress === "string" ? JSON.parse(progress) : progress).toEqual({ done: 1, of: 2 });
      expect(row["result"]).toBeNull();
    });
  }

  if (form !== "rowLock") {
    test("progress shows through a handle on another pool while the row is in work", async () => {
      const { broker, observer, gates } = await setup({ progress: true });
      const published = await broker.publish(ROUTE, { n: 7 }, { columns: { k: "d" } });
      const job = observer.job(ROUTE, published);
      await until(() => gates.started.has(7), 10_000, "the handler to start");
      const running = await job.state();
      expect(running).toMatchObject({ state: "running", progress: { done: 7, of: 10 }, result: null });
      if (running.state === "running") expectTypeOf(running.progress).toEqualTypeOf<Step | null>();
      gates.open(7);
      const end = await job.finished({ pollMs: 30, timeoutMs: 10_000 });
      expect(end).toMatchObject({ state: "done", progress: { done: 7, of: 10 }, result: { url: "/reports/7", pages: 14 } });
    });
  }
});
