/**
 * A worker process killed (SIGKILL) while both children of a fan-out are in its handlers, on every engine and
 * form that survives a crash across processes (SQLite's advisory keys live in one process: not there): the
 * children come back (at once on the row-lock and advisory forms, when their lease runs out on the lease form),
 * a second process runs and acks them, and the step after them is released once, with both results.
 */
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { SqlBroker } from "../../src/index.js";
import { matrix, startFixture, type WorkerProcess } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { crashWorkflow } from "./crash-workflow.js";
import { countOf, createTables } from "./support.js";

const cases = matrix.filter(({ engine, form }) => !(engine.engine === "sqlite" && form === "advisory"));

describe.each(cases)("a worker killed mid-step on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  const workers: WorkerProcess[] = [];
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("the children run again in another process, and the fan-in step is released once", { timeout: 60_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfc").toLowerCase();
    const { Splits, Parts, Sums, Fanned } = crashWorkflow(prefix, form);
    await createTables(db, [Splits, Parts, Sums], closers);
    const worker = (holdMs: number) => {
      const w = startFixture("test/support/fixtures/workflow-worker.ts", { WF_URL: url, WF_PREFIX: prefix, WF_FORM: form, WF_HOLD_MS: String(holdMs) });
      workers.push(w);
      return w;
    };
    const first = worker(600_000);
    await first.waitFor((l) => l.event === "ready", 30_000, "the first worker to start");
    const broker = SqlBroker.fromUrl(url).route(Splits, "split").route(Parts, "part").route(Sums, "sum").workflow(Fanned);
    closers.push(() => broker.close());
    const run = await broker.startWorkflow(Fanned, { n: 1 });
    await first.waitFor((l) => l.event === "start" && l.n === 1, 20_000, "the first child to start");
    await first.waitFor((l) => l.event === "start" && l.n === 2, 20_000, "the second child to start");
    first.child.kill("SIGKILL");
    await first.exited;
    expect(await run.state()).toMatchObject({ state: "running", steps: { split: "done", part: "released", sum: "waiting" } });

    const second = worker(0);
    await expect(run.finished({ timeoutMs: 30_000, pollMs: 50 })).resolves.toEqual({ split: [1, 2], part: [10, 20], sum: 30 });
    await second.waitFor((l) => l.event === "done" && l.n === 30, 10_000, "the fan-in step to run");
    expect(second.lines.filter((l) => l.event === "done")).toHaveLength(1);
    expect(await countOf(db, Sums.table)).toBe(1);
    second.child.kill("SIGTERM");
    await second.exited;
  });
});
