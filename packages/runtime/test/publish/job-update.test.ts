/**
 * `broker.update` and `broker.retryNow` on every engine × form, against real servers: a row not in
 * work takes the changes (payload, run-at, priority, data columns) in one fenced statement; a row
 * in work is left alone (`"running"`), judged as a cancel judges it (a live lease on the database's
 * clock, a claim's row lock, a held advisory key); no row is `"gone"`. A race of updates against
 * real claims never changes a row mid-run. The updates go through a second broker (another pool, as
 * another process would) where the form allows; on SQLite the app's broker, whose process holds the
 * advisory keys.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useJobTables } from "../support/fixtures.js";
import { sleep } from "../support/sleep.js";

interface Job {
  readonly n: number;
}

const POLL_MS = 50;

function specOf(table: string, form: string) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    payload: field.payload<Job>(),
    k: field.data("k").holds<string>().type("text"),
    note: field.data("note").holds<string | null>().type("text"),
    priority: field.priority("priority"),
    retryAfter: field.retryAfter("retry_after"),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns, advisoryLock: "{k}" });
  return defineInbox({ table, columns });
}
type Spec = ReturnType<typeof specOf>;

describe.each(matrix)("update and retryNow on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  const { tables, closers } = useJobTables(
    engine,
    (connected) => {
      ({ db, url } = connected);
    },
    { control: false },
  );

  async function setup() {
    const table = unique(`ju_${form}`).toLowerCase();
    tables.push(table);
    const spec = specOf(table, form);
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs");
    const other = engine.engine === "sqlite" ? broker : SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs");
    closers.push(
      () => broker.close(),
      () => other.close(),
    );
    return { table, spec, broker, other };
  }

  async function readRow(table: string, id: string) {
    const row = (await sql<Record<string, unknown>>`SELECT * FROM ${sql.id(table)} WHERE id = ${Number(id)}`.execute(db)).rows[0];
    if (row === undefined) return undefined;
    const raw = row["payload"];
    const text = typeof raw === "string" ? raw : Buffer.from(raw as Uint8Array).toString("utf8");
    return { payload: JSON.parse(text) as Job, note: row["note"] as string | null, priority: Number(row["priority"]), retryAfter: row["retry_after"] };
  }

  async function startApp(broker: SqlBroker<{ jobs: Spec }>, spec: Spec, handle: (job: Job, id: string, signal: AbortSignal) => Promise<HandlerOutcome>, workers = 4) {
    const queue = InboxQueue.of(spec, "jobs").lease(30_000).pollInterval(POLL_MS).workers(workers);
    const sub = subscriber(queue, async (job, ctx) => handle(job, String(ctx.id), ctx.signal));
    const app = await new App({ name: "jobs", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(sub)).start();
    closers.push(() => app.stop());
    return app;
  }

  test("a queued row takes every change in one statement: payload, run-at, priority, data columns", async () => {
    const { table, broker, other } = await setup();
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a", note: "old" }, priority: 5 });
    const runAt = new Date(Date.now() + 3_600_000);
    expect(await other.update("jobs", published, { payload: { n: 2 }, runAt, priority: 1, columns: { note: "new" } })).toBe("updated");
    const row = await readRow(table, published.id);
    expect(row).toMatchObject({ payload: { n: 2 }, note: "new", priority: 1 });
    expect((await other.job("jobs", published).state()).state).toBe("scheduled");
  });

  test("no row under the id: gone", async () => {
    const { other } = await setup();
    expect(await other.update("jobs", "987654", { payload: { n: 3 } })).toBe("gone");
    expect(await other.retryNow("jobs", "987654")).toBe("gone");
  });

  test("retryNow makes a scheduled row due, and it runs", async () => {
    const { spec, broker, other } = await setup();
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a" }, delay: 3_600_000 });
    const ran: number[] = [];
    await startApp(broker, spec, async (job) => {
      ran.push(job.n);
      return HandlerOutcome.ack();
    });
    await sleep(300);
    expect(ran).toEqual([]);
    // On the row-lock form a claim scanning the row at that instant holds it for its statement: "running", asked again.
    await until(async () => (await other.retryNow("jobs", published.id)) === "updated", 5_000, "retryNow to take the scheduled row");
    await until(() => ran.length === 1, 10_000, "the scheduled row to run after retryNow");
    expect(ran).toEqual([1]);
  });

  test("a row in work is left alone: running, the row unchanged, and the handler ends with what it was given", async () => {
    const { table, spec, broker, other } = await setup();
    const published = await broker.publish("jobs", { n: 1 }, { columns: { k: "a", note: "old" } });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    await startApp(broker, spec, async () => {
      started = true;
      await gate;
      return HandlerOutcome.retryAfter(3_600_000);
    });
    await until(() => started, 10_000, "the handler to start");
    expect(await other.update("jobs", published, { payload: { n: 9 }, columns: { note: "new" } })).toBe("running");
    expect(await other.retryNow("jobs", published.id)).toBe("running");
    expect(await readRow(table, published.id)).toMatchObject({ payload: { n: 1 }, note: "old" });
    release();
    // Settled (retried for an hour): no longer in work, so an update takes.
    await until(async () => (await other.update("jobs", published, { columns: { note: "after" } })) === "updated", 10_000, "the update once the row is out of work");
    expect(await readRow(table, published.id)).toMatchObject({ payload: { n: 1 }, note: "after" });
  });

  test("updates racing real claims never change a row mid-run", async () => {
    const { table, spec, broker, other } = await setup();
    const ROWS = 40;
    const published = await broker.publishMany(
      "jobs",
      Array.from({ length: ROWS }, (_, n) => ({ n })),
      { columns: (job: Job) => ({ k: `k${job.n}` }) },
    );
    const changedMidRun: string[] = [];
    const ran = new Set<string>();
    const answers: Record<string, number> = { updated: 0, running: 0, gone: 0 };
    // Each row is updated until it has run, a few ms apart, from before the app starts until every row ran.
    let firstPass!: () => void;
    const passed = new Promise<void>((resolve) => {
      firstPass = resolve;
    });
    const updating = (async () => {
      const deadline = Date.now() + 10_000;
      for (let pass = 0; ran.size < ROWS && Date.now() < deadline; pass += 1) {
        if (pass === 1) firstPass();
        for (const p of published) {
          if (ran.has(p.id)) continue;
          const answer = await other.update("jobs", p, { payload: { n: 1000 + Number(p.id) } });
          answers[answer] = (answers[answer] ?? 0) + 1;
          await sleep(2);
        }
      }
      firstPass();
    })();
    // One pass before any claim (every row updated), then the claims start while the updates go on.
    await passed;
    await startApp(
      broker,
      spec,
      async (job, id) => {
        await sleep(15);
        const now = await readRow(table, id);
        if (now === undefined || now.payload.n !== job.n) changedMidRun.push(`${id}: got ${job.n}, row reads ${now?.payload.n}`);
        ran.add(id);
        return HandlerOutcome.ack();
      },
      3,
    );
    await updating;
    await until(() => ran.size === ROWS, 15_000, "every row to run");
    expect(changedMidRun).toEqual([]);
    expect(answers["updated"]).toBeGreaterThanOrEqual(ROWS);
  }, 40_000);
});
