/**
 * The soak: 200 runs of charge → 10 pages (fan-out) → merge (fan-in) → email, run by three worker processes while
 * one of them is SIGKILLed every 0.5–1 s (and another started in its place), on every engine and form that
 * survives a crash across processes (SQLite's advisory keys live in one process: not there). Every run finishes
 * with the results its steps returned; every step's row is published once (one merge and one email per run);
 * no step starts before every step it depends on has acked (each handler prints when it starts and when it
 * returns its ack, on the one clock of this machine); and a handler runs twice only when the process that ran
 * it first was killed after it started. In the faults project (alone, after the rest): its worker processes take
 * tens of the servers' connections, which the rest of the suite needs.
 */
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { SqlBroker, type WorkflowRun } from "../../src/index.js";
import { matrix, startFixture, type WorkerProcess } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { sleep } from "../support/sleep.js";
import { PAGES, soakWorkflow } from "../workflow/soak-workflow.js";
import { createTables, decoded, rowsOf } from "../workflow/support.js";

const RUNS = 200;
const cases = matrix.filter(({ engine, form }) => !(engine.engine === "sqlite" && form === "advisory"));

/** A line a soak worker prints. */
interface StepLine {
  readonly event: "ready" | "start" | "acking" | "error";
  readonly step?: "charge" | "page" | "merge" | "email";
  readonly order?: number;
  readonly page?: number | null;
  readonly pid: number;
  readonly time: number;
  readonly message?: string;
  readonly detail?: string;
}

describe.each(cases)("200 order workflows on $engine.name × $form, a worker SIGKILLed every 0.5–1 s", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("every run finishes, each step is published once and released after what it needs, reruns only after kills", { timeout: 180_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfs").toLowerCase();
    const { Charges, Pages, Merges, Emails, Order } = soakWorkflow(prefix, form);
    await createTables(db, [Charges, Pages, Merges, Emails], closers);
    const killedAt = new Map<number, number>();
    const live: WorkerProcess[] = [];
    /** Starts a worker; it joins `live` (the workers a kill may pick) once it is ready. */
    const start = async () => {
      const w = startFixture("test/support/fixtures/workflow-soak-worker.ts", { WF_URL: url, WF_PREFIX: prefix, WF_FORM: form });
      workers.push(w);
      await w.waitFor((l) => l.event === "ready", 30_000, "a worker to start");
      live.push(w);
    };
    await Promise.all([start(), start(), start()]);

    const broker = SqlBroker.fromUrl(url).route(Charges, "charge").route(Pages, "page").route(Merges, "merge").route(Emails, "email").workflow(Order);
    closers.push(() => broker.close());
    const runs: WorkflowRun<typeof Order>[] = [];
    for (let order = 1; order <= RUNS; order++) runs.push(await broker.startWorkflow(Order, { order }));

    // Kill one ready worker every 0.5–1 s and start another beside the clock (a start takes seconds on a loaded
    // machine, and the kills must not wait for it), leaving at least one ready, until every run's email is acked
    // (or 120 s pass).
    const deadline = Date.now() + 120_000;
    let kills = 0;
    const starting: Array<Promise<void>> = [];
    const emailed = async () => (await rowsOf(db, Emails.table)).filter((r) => r.processed_at !== null).length;
    while ((await emailed()) < RUNS && Date.now() < deadline) {
      await sleep((kills === 0 ? 300 : 500) + Math.floor(Math.random() * 500));
      if ((await emailed()) >= RUNS) break;
      // One ready worker left and the others' replacements still starting: wait for one, so work goes on.
      if (live.length < 2) continue;
      const victim = live.splice(Math.floor(Math.random() * live.length), 1)[0] as WorkerProcess;
      victim.child.kill("SIGKILL");
      kills++;
      await victim.exited;
      // When it was seen dead, not when the signal was sent: on a loaded machine the process ran on for a millisecond
      // after `kill()` and started a step (a start line 1 ms after a time taken before the signal).
      killedAt.set(victim.child.pid as number, Date.now());
      const started = start();
      // A start that fails is reported by the await below, not as an unhandled rejection meanwhile.
      started.catch(() => {});
      starting.push(started);
    }
    await Promise.all(starting);
    const results = await Promise.all(runs.map((run) => run.finished({ timeoutMs: 30_000, pollMs: 100 })));
    for (const w of live) w.child.kill("SIGTERM");
    await Promise.all(live.map((w) => w.exited));
    expect(kills, "the soak ran long enough to kill a worker three times").toBeGreaterThanOrEqual(3);

    // Every run finished with what its steps returned.
    results.forEach((result, i) => {
      const order = i + 1;
      const pages = Array.from({ length: PAGES }, (_, p) => order * 100 + p);
      const total = pages.reduce((a, b) => a + b, 0);
      expect(result, `run of order ${order}`).toEqual({ charge: [...Array(PAGES).keys()], page: pages, merge: total, email: `order ${order}: ${total}` });
    });

    // Each step was published once per run: one charge, ten pages, one merge (the fan-in), one email.
    const perOrder = async (table: string) => {
      const counts = new Map<string, number>();
      for (const row of await rowsOf(db, table)) {
        const payload = decoded(row.payload) as { order: number; page?: number };
        const key = payload.page === undefined ? String(payload.order) : `${payload.order}/${payload.page}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return counts;
    };
    for (const [table, rows] of [
      [Charges.table, RUNS],
      [Pages.table, RUNS * PAGES],
      [Merges.table, RUNS],
      [Emails.table, RUNS],
    ] as const) {
      const counts = await perOrder(table);
      expect([counts.size, [...counts.values()].filter((n) => n !== 1)], table).toEqual([rows, []]);
    }

    // No step started before every step it depends on had acked: on one clock, its first start comes after
    // the last `acking` line of each step before it (an ack commits after its line is printed).
    const lines = workers.flatMap((w) => w.lines as unknown as StepLine[]);
    const errors = lines.filter((l) => l.event === "error");
    expect(errors.filter((l) => !/terminat|closed|ECONNRESET|Connection lost/i.test(`${l.message} ${l.detail}`))).toEqual([]);
    const of = (event: "start" | "acking", step: string, order: number) => lines.filter((l) => l.event === event && l.step === step && l.order === order).map((l) => l.time);
    for (let order = 1; order <= RUNS; order++) {
      for (const [step, before] of [
        ["page", "charge"],
        ["merge", "page"],
        ["email", "merge"],
      ] as const) {
        const [starts, acks] = [of("start", step, order), of("acking", before, order)];
        // Every step printed its lines: a step that started and acked in no worker would pass the comparison vacuously.
        expect([starts.length > 0, acks.length >= (before === "page" ? PAGES : 1)], `order ${order}: ${step} after ${before}`).toEqual([true, true]);
        const firstStart = Math.min(...starts);
        const lastAck = Math.max(...acks);
        expect(firstStart, `order ${order}: ${step} started before ${before} acked`).toBeGreaterThanOrEqual(lastAck);
      }
    }

    // A handler ran more than once only when the process that ran it before was killed after it started.
    const starts = new Map<string, StepLine[]>();
    for (const l of lines.filter((x) => x.event === "start")) {
      const key = `${l.step} ${l.order} ${l.page ?? ""}`;
      starts.set(key, [...(starts.get(key) ?? []), l]);
    }
    const unexplained = [...starts.entries()].flatMap(([key, all]) => {
      const sorted = [...all].sort((a, b) => a.time - b.time);
      return sorted.slice(0, -1).flatMap((l) => {
        const killed = killedAt.get(l.pid);
        return killed !== undefined && killed >= l.time ? [] : [`${key}: ran in ${l.pid} at ${l.time}, which was ${killed === undefined ? "never killed" : `killed at ${killed}`}`];
      });
    });
    expect(unexplained).toEqual([]);
    const reruns = [...starts.values()].filter((all) => all.length > 1).length;
    console.log(`${engine.name} × ${form}: ${RUNS} runs, ${kills} kills, ${reruns} steps run again after a kill`);
  });
});
