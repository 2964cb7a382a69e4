/**
 * `broker.jobs(route).list(…)` on every engine × form, against real servers: each state listed as
 * `state()` reads it (scheduled on the database's clock, waiting, running while a handler holds the
 * row, done, dead-lettered into a group and into a table), filters by key and by a data column,
 * 10,000 jobs paged through by state with no duplicates or gaps while a subscription drains the
 * table, and a bad limit, cursor or state refused. The list reads through a broker of its own where
 * the form allows (a second pool, as another process would); on SQLite the app's broker, whose
 * process registry holds the advisory keys.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber, type JobListState, type SqlInboxError } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useJobTables } from "../support/fixtures.js";
import { sleep } from "../support/sleep.js";

interface Job {
  readonly n: number;
}

const POLL_MS = 50;

/** The jobs table in `form`: it keeps handled rows (processedAt), has a group, a run-at, a last error, a dedup key and a data column `k`. */
function specOf(table: string, form: string) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    payload: field.payload<Job>(),
    k: field.data("k").holds<string>().type("text"),
    jobKey: field.key("job_key"),
    grp: field.group("grp"),
    retryAfter: field.retryAfter("retry_after"),
    lastError: field.lastError("last_error"),
    processedAt: field.processedAt("processed_at"),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{k}" });
  return defineInbox({ table, columns });
}
type Spec = ReturnType<typeof specOf>;

/** A dead-letter table that keeps the job's id. */
function deadSpecOf(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().holds<number>().type("bigint"),
      payload: field.payload<Job>(),
      lastError: field.lastError("last_error"),
      failedAttempts: field.failedAttempts("failed_attempts"),
    },
  });
}

/** The ids of every page of `state`, walked to the end. */
async function walk(
  list: { list(q: { state: JobListState; limit: number; after?: string | null }): Promise<{ jobs: ReadonlyArray<{ id: string }>; next: string | null }> },
  state: JobListState,
  limit: number,
): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await list.list({ state, limit, after });
    ids.push(...page.jobs.map((j) => j.id));
    if (page.next === null) return ids;
    after = page.next;
  }
}

describe.each(matrix)("jobs(route).list on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  const { tables, closers } = useJobTables(engine, (connected) => {
    ({ db, url } = connected);
  });

  /** A fresh table, a broker routing it under a route of its own, and the broker the list reads through. */
  async function setup() {
    const table = unique(`jl_${form}`).toLowerCase();
    const route = table;
    const dead = `${table}_dead`;
    tables.push(table, dead);
    const spec = specOf(table, form);
    const deadSpec = deadSpecOf(dead);
    await createInboxTable(db, spec);
    await createInboxTable(db, deadSpec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 12 } }).route(spec, route);
    const observer = engine.engine === "sqlite" ? broker : SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, route);
    closers.push(
      () => broker.close(),
      () => observer.close(),
    );
    return { route, spec, deadSpec, broker, observer };
  }

  async function startApp(broker: SqlBroker<Record<string, Spec>>, queue: InboxQueue<Spec>, handle: (job: Job, ctx: { signal: AbortSignal }) => Promise<HandlerOutcome>) {
    const app = await new App({ name: "list", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(subscriber(queue, handle))).start();
    closers.push(() => app.stop());
    return app;
  }

  test("each state lists the jobs state() reads in it, in id order, a page at a time", async () => {
    const { route, spec, broker, observer } = await setup();
    const dead = `${route}.dead`;
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started = new Set<number>();
    const settled = new Set<number>();
    const queue = InboxQueue.of(spec, route).lease(5000).pollInterval(POLL_MS).workers(4).deadLetter({ group: dead });
    // 1 is held in work, 2 is done, 3 is dead-lettered into the group.
    const [running, done, deadLettered] = await broker.publishMany(route, [{ n: 1 }, { n: 2 }, { n: 3 }], { columns: (p: Job) => ({ k: `k${p.n}` }) });
    const app = await startApp(broker, queue, async (job, ctx) => {
      started.add(job.n);
      if (job.n === 1) await Promise.race([gate, new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }))]);
      settled.add(job.n);
      return job.n === 3 ? HandlerOutcome.deadLetter("no such customer") : HandlerOutcome.ack();
    });
    await until(() => started.has(1) && settled.has(2) && settled.has(3), 10_000, "jobs 1, 2 and 3 to be taken");
    await broker.pause(route);
    await sleep(POLL_MS * 6);
    const waiting = await broker.publishMany(route, [{ n: 4 }, { n: 5 }, { n: 6 }], { columns: (p: Job) => ({ k: `k${p.n}` }), keys: ["a", "b", "c"] });
    const scheduled = await broker.publishMany(route, [{ n: 7 }, { n: 8 }], { columns: (p: Job) => ({ k: `k${p.n}` }), delay: 60_000 });
    const jobs = observer.jobs(route, { deadLetter: { group: dead } });

    await until(async () => (await jobs.list({ state: "done" })).jobs.length === 1 && (await jobs.list({ state: "deadLettered" })).jobs.length === 1, 10_000, "2 and 3 to settle");
    const [first] = (await jobs.list({ state: "waiting" })).jobs;
    expect(first).toEqual({ state: "waiting", id: waiting[0]?.id, attempt: 0, runAt: null, lastError: null, payload: { n: 4 }, ...(form === "lease" ? { leaseUntil: null } : {}) });
    // Pages of 2: on the row-lock and advisory forms a page probes due rows, so the one in work leaves a page short.
    const pages: Array<readonly string[]> = [];
    let after: string | null = null;
    do {
      const page: { jobs: ReadonlyArray<{ id: string }>; next: string | null } = await jobs.list({ state: "waiting", limit: 2, after });
      pages.push(page.jobs.map((j) => j.id));
      after = page.next;
    } while (after !== null);
    // Lease: [4, 5], [6]. Row lock and advisory: due rows [1, 4] give [4], [5, 6] a full page, then an empty last one.
    expect(pages).toEqual(form === "lease" ? [waiting.slice(0, 2).map((p) => p.id), [waiting[2]?.id]] : [[waiting[0]?.id], waiting.slice(1).map((p) => p.id), []]);

    const inWork = await jobs.list({ state: "running" });
    expect(inWork.jobs.map((j) => j.id)).toEqual([running?.id]);
    expect(inWork.jobs[0]).toMatchObject({ state: "running", attempt: 1, payload: { n: 1 } });
    expect(await observer.job(route, running?.id ?? "").state()).toMatchObject({ state: "running", attempt: 1 });

    const later = await jobs.list({ state: "scheduled" });
    expect(later.jobs.map((j) => j.id)).toEqual(scheduled.map((p) => p.id));
    expect(later.jobs[0]?.runAt?.getTime()).toBeGreaterThan(Date.now() + 50_000);

    const handled = await jobs.list({ state: "done" });
    expect(handled.jobs.map((j) => j.id)).toEqual([done?.id]);
    expect(handled.jobs[0]?.processedAt).toBeInstanceOf(Date);
    expect(handled.jobs[0]).toMatchObject({ attempt: 1, payload: { n: 2 } });

    const dlq = await jobs.list({ state: "deadLettered" });
    expect(dlq.jobs).toEqual([{ ...(await observer.job(route, deadLettered?.id ?? "", { deadLetter: { group: dead } }).state()), payload: { n: 3 } }]);
    expect(dlq.jobs[0]).toMatchObject({ state: "deadLettered", id: deadLettered?.id, lastError: "no such customer" });

    // By the dedup key, and by a data column.
    expect((await jobs.list({ state: "waiting", key: "b" })).jobs.map((j) => j.id)).toEqual([waiting[1]?.id]);
    expect((await jobs.list({ state: "waiting", columns: { k: "k6" } })).jobs.map((j) => j.id)).toEqual([waiting[2]?.id]);
    expect((await jobs.list({ state: "running", columns: { k: "k6" } })).jobs).toEqual([]);
    expect((await jobs.list({ state: "scheduled", columns: { k: "k8" } })).jobs.map((j) => j.id)).toEqual([scheduled[1]?.id]);

    // Without the dead-letter place the list cannot look there.
    const blind = await observer
      .jobs(route)
      .list({ state: "deadLettered" })
      .catch((e: unknown) => e);
    expect((blind as SqlInboxError).code).toBe("Declaration");
    expect((blind as Error).message).toMatch(/needs to know where the dead letters go/);
    release();
    await until(async () => (await jobs.list({ state: "done" })).jobs.length === 2, 10_000, "1 to be done");
    expect((await jobs.list({ state: "running" })).jobs).toEqual([]);
    await app.stop();
  });

  test("dead letters moved into a table are listed from it, by the id they kept", async () => {
    const { route, spec, deadSpec, broker, observer } = await setup();
    const queue = InboxQueue.of(spec, route).pollInterval(POLL_MS).deadLetter(deadSpec, { maxAttempts: 1 });
    const published = await broker.publishMany(route, [{ n: 1 }, { n: 2 }], { columns: { k: "a" } });
    await startApp(broker, queue, async () => {
      throw new Error("boom");
    });
    const jobs = observer.jobs(route, { deadLetter: deadSpec });
    await until(async () => (await jobs.list({ state: "deadLettered" })).jobs.length === 2, 10_000, "both to be dead-lettered");
    const page = await jobs.list({ state: "deadLettered", limit: 1 });
    expect(page.jobs).toEqual([{ state: "deadLettered", id: published[0]?.id, lastError: "Error: boom", attempts: 1, payload: { n: 1 } }]);
    const rest = await jobs.list({ state: "deadLettered", limit: 1, after: page.next });
    expect(rest.jobs.map((j) => j.id)).toEqual([published[1]?.id]);
    expect((await jobs.list({ state: "deadLettered", limit: 1, after: rest.next })).jobs).toEqual([]);
    // The dead-letter table has no column k: a filter on it is refused, naming the column.
    const filtered = await jobs.list({ state: "deadLettered", columns: { k: "a" } }).catch((e: unknown) => e);
    expect((filtered as Error).message).toMatch(/filters on "k", which the dead-letter table "[^"]+" has no column for/);
  });

  test("10,000 jobs paged through by state while a subscription drains the table: no id twice, none never touched left out", async () => {
    const { route, spec, broker, observer } = await setup();
    const count = 10_000;
    const payloads = Array.from({ length: count }, (_, n) => ({ n }));
    const published: string[] = [];
    for (let i = 0; i < count; i += 2000) {
      const part = payloads.slice(i, i + 2000);
      published.push(...(await broker.publishMany(route, part, { columns: (p: Job) => ({ k: `k${p.n}` }) })).map((p) => p.id));
    }
    const touched = new Set<string>();
    const queue = InboxQueue.of(spec, route).lease(5000).pollInterval(POLL_MS).workers(8);
    const app = await startApp(broker, queue, async (job) => {
      touched.add(published[job.n] ?? "");
      await sleep(2);
      return HandlerOutcome.ack();
    });
    await until(() => touched.size > 0, 10_000, "the drain to start");
    const jobs = observer.jobs(route);
    const waiting = await walk(jobs, "waiting", 500);
    // A row claimed as the walk ended has its handler started within moments.
    await sleep(200);
    const touchedAtEnd = new Set(touched);
    const running = await walk(jobs, "running", 500);
    const done = await walk(jobs, "done", 500);
    // What the done walk saw stays done.
    const doneNow = new Set(await walk(jobs, "done", 1000));
    await app.stop();
    for (const ids of [waiting, running, done]) expect(new Set(ids).size).toBe(ids.length);
    // A job no handler had started by the walk's end was waiting all along: the waiting walk saw it.
    const seen = new Set(waiting);
    const missed = published.filter((id) => !touchedAtEnd.has(id) && !seen.has(id));
    expect(missed).toEqual([]);
    expect(touchedAtEnd.size).toBeLessThan(count);
    expect(done.filter((id) => !doneNow.has(id))).toEqual([]);
    expect(waiting.every((id) => published.includes(id))).toBe(true);
  }, 60_000);

  test("a table shared by two routes lists each route's rows; a table with no group column lists all of its rows", async () => {
    const { route, spec } = await setup();
    const other = `${route}_other`;
    const shared = SqlBroker.fromUrl(url, { pool: { max: 3 } })
      .route(spec, route)
      .route(spec, other);
    closers.push(() => shared.close());
    const mine = await shared.publishMany(route, [{ n: 1 }, { n: 2 }], { columns: { k: "a" } });
    const theirs = await shared.publishMany(other, [{ n: 3 }], { columns: { k: "b" } });
    expect((await shared.jobs(route).list({ state: "waiting" })).jobs.map((j) => j.id)).toEqual(mine.map((p) => p.id));
    expect((await shared.jobs(other).list({ state: "waiting" })).jobs.map((j) => j.id)).toEqual(theirs.map((p) => p.id));

    // No group column: no equality narrows the page (SQLite's statement walks the rowid).
    const table = unique(`jl_plain_${form}`).toLowerCase();
    tables.push(table);
    const columns = {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      payload: field.payload<Job>(),
      k: field.data("k").holds<string>().type("text"),
      retryAfter: field.retryAfter("retry_after"),
    };
    const plain =
      form === "lease"
        ? defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } })
        : form === "advisory"
          ? defineInbox({ table, columns, advisoryLock: "{k}" })
          : defineInbox({ table, columns });
    await createInboxTable(db, plain);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(plain, "plain");
    closers.push(() => broker.close());
    const due = await broker.publishMany("plain", [{ n: 1 }, { n: 2 }, { n: 3 }], { columns: (p: Job) => ({ k: `k${p.n}` }) });
    const later = await broker.publishMany("plain", [{ n: 4 }], { columns: { k: "k4" }, delay: 60_000 });
    const first = await broker.jobs("plain").list({ state: "waiting", limit: 2 });
    const rest = await broker.jobs("plain").list({ state: "waiting", limit: 2, after: first.next });
    expect([...first.jobs, ...rest.jobs].map((j) => j.id)).toEqual(due.map((p) => p.id));
    expect(rest.next).toBeNull();
    expect((await broker.jobs("plain").list({ state: "scheduled" })).jobs.map((j) => j.id)).toEqual(later.map((p) => p.id));
    expect((await broker.jobs("plain").list({ state: "waiting", columns: { k: "k2" } })).jobs.map((j) => j.id)).toEqual([due[1]?.id]);
  });

  test("a bad limit, cursor or state is refused, naming what is wrong", async () => {
    const { route, observer } = await setup();
    await observer.publishMany(route, [{ n: 1 }, { n: 2 }], { columns: { k: "a" } });
    const jobs = observer.jobs(route);
    for (const limit of [0, 1001, 1.5, -1]) {
      const error = await jobs.list({ state: "waiting", limit }).catch((e: unknown) => e);
      expect((error as SqlInboxError).code).toBe("Declaration");
      expect((error as Error).message).toMatch(/jobs\(…\)\.list\(\{ limit \}\) must be a whole number from 1 to 1000, got /);
    }
    const page = await jobs.list({ state: "waiting", limit: 1 });
    expect(page.next).not.toBeNull();
    for (const after of ["not a cursor", Buffer.from("[1,2,3]").toString("base64url")]) {
      const error = await jobs.list({ state: "waiting", after }).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/jobs\(…\)\.list\(\{ after \}\) is not a cursor of a "waiting" page/);
    }
    // A cursor of another state's pages.
    const other = await jobs.list({ state: "done", after: page.next }).catch((e: unknown) => e);
    expect((other as Error).message).toMatch(/is not a cursor of a "done" page/);
    const state = await jobs.list({ state: "gone" as "done" }).catch((e: unknown) => e);
    expect((state as Error).message).toMatch(/jobs\(…\)\.list\(\{ state \}\) must be one of scheduled, waiting, running, done, deadLettered/);
    const column = await jobs.list({ state: "waiting", columns: { nope: 1 } as never }).catch((e: unknown) => e);
    expect((column as Error).message).toMatch(/names "nope", which is not a data column/);
  });
});
