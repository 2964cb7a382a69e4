/**
 * A release wakes another process at once on PostgreSQL with `listenNotify()`: the ack that releases a
 * step sends the `NOTIFY` of the step's table in its own transaction (delivered when it commits), so a
 * second process whose subscription of that table polls once a minute starts the step within a second.
 */
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix, startFixture, type WorkerProcess } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { crashWorkflow } from "./crash-workflow.js";
import { countOf, createTables } from "./support.js";

const cases = matrix.filter(({ engine }) => engine.engine === "postgres");

describe.each(cases)("a release wakes another process on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("the step released by an ack here starts within 1 s in a process that polls once a minute", { timeout: 60_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfn").toLowerCase();
    const { Splits, Parts, Sums, Fanned } = crashWorkflow(prefix, form);
    await createTables(db, [Splits, Parts, Sums], closers);
    const other = startFixture("test/support/fixtures/wake-worker.ts", { WF_URL: url, WF_PREFIX: prefix, WF_FORM: form, WF_STEP: "sum" });
    workers.push(other);
    await other.waitFor((l) => l.event === "ready", 30_000, "the other process to start");

    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } })
      .listenNotify()
      .route(Splits, "split")
      .route(Parts, "part")
      .route(Sums, "sum")
      .workflow(Fanned);
    closers.push(() => broker.close());
    let lastAck = 0;
    let acks = 0;
    const app = await new App({ name: "wf-notify", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b.include(subscriber(InboxQueue.of(Splits, "split").pollInterval(50), async (job, ctx) => ctx.ack([job.n, job.n + 1]))).include(
          subscriber(InboxQueue.of(Parts, "part").pollInterval(50), async (job, ctx) => {
            acks++;
            lastAck = Date.now();
            return ctx.ack(job.n * 10);
          }),
        ),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Fanned, { n: 1 });
    await other.waitFor((l) => l.event === "done" && l.n === 30, 5_000, "the sum step to run in the other process");
    const started = other.lines.find((l) => l.event === "done")?.time as number;
    expect(acks).toBe(2);
    expect(started - lastAck).toBeLessThan(1000);
    await expect(run.finished({ timeoutMs: 10_000, pollMs: 20 })).resolves.toEqual({ split: [1, 2], part: [10, 20], sum: 30 });
    expect(await countOf(db, Sums.table)).toBe(1);
    expect(other.lines.filter((l) => l.event === "error")).toEqual([]);
  });

  test("startWorkflow from a producer with listenNotify() starts the first step within 1 s in a process that polls once a minute", { timeout: 60_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfs").toLowerCase();
    const { Splits, Parts, Sums, Fanned } = crashWorkflow(prefix, form);
    await createTables(db, [Splits, Parts, Sums], closers);
    const other = startFixture("test/support/fixtures/wake-worker.ts", { WF_URL: url, WF_PREFIX: prefix, WF_FORM: form, WF_STEP: "split" });
    workers.push(other);
    await other.waitFor((l) => l.event === "ready", 30_000, "the other process to start");
    // A producer: no app, so nothing of this process listens.
    const broker = SqlBroker.fromUrl(url, { pool: { max: 2 } })
      .listenNotify()
      .route(Splits, "split")
      .route(Parts, "part")
      .route(Sums, "sum")
      .workflow(Fanned);
    closers.push(() => broker.close());
    const startedAt = Date.now();
    await broker.startWorkflow(Fanned, { n: 5 });
    await other.waitFor((l) => l.event === "start" && l.n === 5, 5_000, "the first step to run in the other process");
    expect((other.lines.find((l) => l.event === "start")?.time as number) - startedAt).toBeLessThan(1000);
  });
});
