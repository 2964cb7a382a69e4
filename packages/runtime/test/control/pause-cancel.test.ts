/**
 * Pause, resume and cancel across two real processes, on every engine × form (SQLite advisory is
 * left out by design: its keys live in the process, so one SQLite file serves one process): the
 * test process pauses, resumes and cancels through a broker of its own; a worker process runs the
 * subscription and prints what it starts, finishes and is told to stop.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import type { AnyKysely } from "../../src/drivers/database.js";
import { namesSubscription } from "@sqlinbox/database";
import { SqlBroker, createControlTable } from "../../src/index.js";
import { unique } from "../support/engines.js";
import { createJobsTable, insertJobs, jobsSpecOf, matrix, readJobs, startFixture, until, type WorkerLine, type WorkerProcess } from "../support/claim-forms.js";
import { sleep } from "../support/sleep.js";

const POLL_MS = 100;
const pairs = matrix.filter(({ engine, form }) => !(engine.engine === "sqlite" && form === "advisory"));

type Line = WorkerLine & { readonly event: string };
/** A line of `event` (for row `id`), including the events only this fixture prints. */
const is =
  (event: string, id?: number) =>
  (l: WorkerLine): boolean =>
    (l as Line).event === event && (id === undefined || l.id === id);
const linesOf = (w: WorkerProcess, event: string): Line[] => (w.lines as Line[]).filter((l) => l.event === event);

describe.each(pairs)("pause, resume and cancel on $engine.name × $form", ({ engine, form }) => {
  let db: AnyKysely;
  let url: string;
  const workers: WorkerProcess[] = [];
  const tables: string[] = [];
  const brokers: SqlBroker[] = [];

  beforeAll(async () => {
    url = engine.url();
    db = await engine.connect(url);
    await createControlTable(db);
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
    for (const b of brokers) await b.close();
    for (const t of tables) await engine.dropTable(db, t);
    await db.destroy();
    engine.cleanup();
  });

  const setup = async (prefix: string) => {
    const table = unique(`${prefix}_${form}`).toLowerCase();
    tables.push(table);
    await createJobsTable(engine, db, table);
    // A route of its own: the control table is shared by every test on this database.
    const route = unique("jobs");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(jobsSpecOf(table, form), route);
    brokers.push(broker as unknown as SqlBroker);
    return { table, broker, route };
  };
  const start = (table: string, route: string, options: { holdMs: number; workers: number; pollMs?: number; listen?: boolean; longFrom?: number }): WorkerProcess => {
    const worker = startFixture("test/support/fixtures/control-worker.ts", {
      WORKER_URL: url,
      WORKER_TABLE: table,
      WORKER_ROUTE: route,
      WORKER_FORM: form,
      WORKER_WORKERS: String(options.workers),
      WORKER_HOLD_MS: String(options.holdMs),
      WORKER_POLL_MS: String(options.pollMs ?? POLL_MS),
      WORKER_LISTEN: options.listen === true ? "1" : "0",
      WORKER_LONG_FROM: String(options.longFrom ?? ""),
    });
    workers.push(worker);
    return worker;
  };
  const stop = async (w: WorkerProcess): Promise<void> => {
    w.child.kill("SIGTERM");
    await w.exited;
  };

  test("a pause stops claims within a poll interval while rows in work finish; it outlives a restart; resume claims again", async () => {
    const { table, broker, route } = await setup("pause");
    await insertJobs(db, table, 30);
    const first = start(table, route, { holdMs: 150, workers: 2 });
    await first.waitFor((l) => l.event === "start", 20_000, "a first start");
    await broker.pause(route);
    const pausedAt = Date.now();
    // One poll interval for the watch to read the pause, and a wide margin for a loaded machine.
    await sleep(1500);
    const lastStart = Math.max(...linesOf(first, "start").map((l) => l.time));
    expect(lastStart - pausedAt).toBeLessThan(POLL_MS + 1000);
    const startsThen = linesOf(first, "start").length;
    // Every row in work at the pause finished (none cut short), and nothing starts while paused.
    await until(() => linesOf(first, "done").length === startsThen, 5000, "the rows in work to finish");
    await sleep(600);
    expect(linesOf(first, "start").length).toBe(startsThen);
    expect(startsThen).toBeLessThan(30);

    // A new process on a paused route claims nothing.
    await stop(first);
    const second = start(table, route, { holdMs: 0, workers: 2 });
    await second.waitFor((l) => l.event === "ready", 20_000, "ready");
    await sleep(1000);
    expect(linesOf(second, "start")).toEqual([]);
    expect((await readJobs(db, table)).length).toBe(30 - startsThen);

    expect(await broker.resume(route)).toBe(true);
    await until(async () => (await readJobs(db, table)).length === 0, 30_000, "the table to drain after resume");
    expect(linesOf(second, "start").length).toBe(30 - startsThen);
    expect([...linesOf(first, "error"), ...linesOf(second, "error")]).toEqual([]);
    await stop(second);
    expect(await broker.resume(route)).toBe(false);
  });

  test("cancel: a queued row is removed and never starts; a row in work has its signal aborted in the other process and is dropped", async () => {
    const { table, broker, route } = await setup("cancel");
    await insertJobs(db, table, 3);
    const ids = (await readJobs(db, table)).map((r) => r.id);
    const [inWork, next, queued] = ids as [number, number, number];
    const worker = start(table, route, { holdMs: 60_000, workers: 1 });
    await worker.waitFor(is("start", inWork), 20_000, "the first row to start");

    expect(await broker.cancel(route, queued)).toBe("removed");
    expect((await readJobs(db, table)).map((r) => r.id)).toEqual([inWork, next]);

    const cancelledAt = Date.now();
    expect(await broker.cancel(route, inWork)).toBe("signalled");
    const aborted = await worker.waitFor(is("aborted", inWork), 10_000, "the signal to abort");
    expect((aborted as Line & { code?: string }).code).toBe("Cancelled");
    expect(aborted.time - cancelledAt).toBeLessThan(POLL_MS + 1000);
    await worker.waitFor(is("dropped", inWork), 10_000, "the drop");
    // Dropped: the row is gone; the next one starts; the cancelled queued row never did.
    await worker.waitFor(is("start", next), 10_000, "the next row to start");
    // The drop's settlement may still be on its way (the lease form frees the worker first).
    await until(async () => (await readJobs(db, table)).length === 1, 5000, "the dropped row to go");
    expect((await readJobs(db, table)).map((r) => r.id)).toEqual([next]);
    expect(await broker.cancel(route, inWork)).toBe("not found");

    // A request naming the table, as `sqlinbox cancel` and the dashboard may write it, reaches the row's subscription too.
    for (const query of dialectFor(engine.engine).control.requestCancel(table, String(next), new Date())) await db.executeQuery(query);
    const aborted2 = await worker.waitFor(is("aborted", next), 10_000, "the table-named request to abort the signal");
    expect((aborted2 as Line & { code?: string }).code).toBe("Cancelled");
    await worker.waitFor(is("dropped", next), 10_000, "the second drop");
    await until(async () => (await readJobs(db, table)).length === 0, 5000, "the table to be empty");
    expect(linesOf(worker, "start").map((l) => l.id)).toEqual([inWork, next]);
    expect(linesOf(worker, "error")).toEqual([]);
    // Each drop is logged once, as a cancel: a handler that stopped on its signal did not drop its row itself.
    expect(linesOf(worker, "dropped").map((l) => l.id)).toEqual([inWork, next]);
    expect(linesOf(worker, "warn")).toEqual([]);
    // Served requests are cleared by the process that served them, at its next read.
    const requests = async () => (await db.selectFrom("sqlinbox_control").select(["target"]).where("kind", "=", "cancel").where("route", "in", [route, table]).execute()).length;
    await until(async () => (await requests()) === 0, 5000, "the served cancel requests to be cleared");
    await stop(worker);
  });

  // Postgres with listenNotify(): a pause or a cancel notifies, and the other process reads the control table at once.
  test.runIf(engine.engine === "postgres")("with listenNotify() a pause and a cancel reach the other process at once, well within its poll interval", async () => {
    const SLOW_POLL_MS = 5000;
    const { table, broker, route } = await setup("notify");
    await insertJobs(db, table, 40);
    const worker = start(table, route, { holdMs: 100, workers: 1, pollMs: SLOW_POLL_MS, listen: true, longFrom: 30 });
    await worker.waitFor((l) => l.event === "start", 20_000, "a first start");
    await broker.pause(route);
    const pausedAt = Date.now();
    await sleep(1500);
    const lastStart = Math.max(...linesOf(worker, "start").map((l) => l.time));
    expect(lastStart - pausedAt).toBeLessThan(1000);
    const started = linesOf(worker, "start").length;
    expect(started).toBeLessThan(40);

    await broker.resume(route);
    const resumedAt = Date.now();
    const restarted = await worker.waitFor((l) => l.event === "start" && l.time > resumedAt, 5000, "a start after resume");
    expect(restarted.time - resumedAt).toBeLessThan(1000 + SLOW_POLL_MS / 5);

    // Rows from n = 30 on hold until their signal aborts: the cancel finds one in work, whatever the machine's load.
    const long = await worker.waitFor((l) => l.event === "start" && Number(l["n"]) >= 30, 20_000, "a long row's start");
    const inWork = long.id as number;
    const cancelledAt = Date.now();
    expect(await broker.cancel(route, inWork)).toBe("signalled");
    const aborted = await worker.waitFor(is("aborted", inWork), 3000, "the signal to abort");
    expect(aborted.time - cancelledAt).toBeLessThan(1000);
    await stop(worker);
  });
});

describe("which subscriptions a pause names", () => {
  test.each([
    ["reports", "reports", true],
    ["reports", "reports.daily", false],
    ["reports.*", "reports.daily", true],
    ["reports.*", "reports", false],
    ["reports.*", "billing.daily", false],
    ["*", "anything", true],
  ])("a pause of %s applies to %s: %s", (route, subscription, applies) => {
    expect(namesSubscription(route, subscription)).toBe(applies);
  });
});
