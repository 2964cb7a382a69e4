/**
 * `Workflow.retain` on every engine: a running app deletes the finished runs of a workflow that declares
 * windows once they are older than the window of their state (every row of each run: its own, its steps'),
 * and keeps the runs of a state it declares no window for (failed here), the runs not yet that old, and the
 * runs of another workflow without windows. A pruned run reads `gone`. The declaration's mistakes throw.
 */
import { payloadOf, workflow } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createControlTable, silentLogger, subscriber } from "../../src/index.js";
import { engines, unique } from "../support/engines.js";
import { createTables, stepTable } from "./support.js";

const WINDOW_MS = 3000;

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> => {
  for (const deadline = Date.now() + timeoutMs; !(await check()); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

test("a window is a whole number of ms for done, cancelled or failed", () => {
  const Steps = stepTable<{ n: number }, number>("wr_declared", "lease");
  const Flow = workflow("wr_declared", payloadOf<{ n: number }>()).step("one", Steps, (input) => input);
  expect(Flow.retention).toBeUndefined();
  expect(Flow.retain({ done: 1000 }).step("two", Steps, (input) => input).retention).toEqual({ done: 1000 });
  expect(() => Flow.retain({})).toThrow('workflow "wr_declared": retain names no window: give done, cancelled or failed (ms)');
  expect(() => Flow.retain({ done: 1.5 })).toThrow('workflow "wr_declared": retain: done must be a whole number of ms, at least 1; got 1.5');
  expect(() => Flow.retain({ running: 5 } as never)).toThrow('workflow "wr_declared": retain: "running" is no run state a window applies to (done, cancelled, failed)');
});

describe.each(engines)("finished runs pruned on $name", (engine) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("done and cancelled runs go once older than their window, with every row; failed runs and another workflow's stay", { timeout: 60_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    await createControlTable(db);
    const prefix = unique("wr").toLowerCase();
    const Steps = stepTable<{ n: number; fail?: boolean }, number>(`${prefix}_step`, "lease");
    const Nexts = stepTable<{ n: number }, number>(`${prefix}_next`, "lease");
    await createTables(db, [Steps, Nexts], closers);
    const shape = (name: string) =>
      workflow(name, payloadOf<{ n: number; fail?: boolean }>())
        .step("one", Steps, (input) => input)
        .step("two", Nexts, { after: ["one"] }, (_, { one }) => ({ n: one ?? 0 }));
    const Pruned = shape(`${prefix}_pruned`).retain({ done: WINDOW_MS, cancelled: WINDOW_MS });
    const Kept = shape(`${prefix}_kept`);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Steps, "one")
      .route(Nexts, "two")
      .workflow(Pruned)
      .workflow(Kept);
    closers.push(() => broker.close());
    const rowsOf = async (id: string) => Number((await sql<{ n: unknown }>`select count(*) as n from sqlinbox_workflows where workflow_id = ${id}`.execute(db)).rows[0]?.n);

    // Cancelled before any app runs: its first step's job is removed from its queue.
    const cancelled = await broker.startWorkflow(Pruned, { n: 0 });
    expect(await cancelled.cancel()).toBe(true);
    const done = [await broker.startWorkflow(Pruned, { n: 1 }), await broker.startWorkflow(Pruned, { n: 2 })];
    const failed = await broker.startWorkflow(Pruned, { n: 3, fail: true });
    const other = await broker.startWorkflow(Kept, { n: 4 });
    const app = await new App({ name: "wf-retention", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(subscriber(InboxQueue.of(Steps, "one").pollInterval(20), async (job, ctx) => (job.fail === true ? HandlerOutcome.drop() : ctx.ack(job.n * 10))))
          .include(subscriber(InboxQueue.of(Nexts, "two").pollInterval(20), async (job, ctx) => ctx.ack(job.n + 1))),
      )
      .start();
    closers.push(() => app.stop());
    for (const run of [...done, other]) await run.finished({ timeoutMs: 20_000, pollMs: 50 });
    await until("the failing run to fail", async () => (await failed.state()).state === "failed");
    // Not yet older than the window: every row is there (the run's own and its two steps').
    const finishedAt = Date.now();
    const present = await Promise.all([cancelled, ...done, failed, other].map((r) => rowsOf(r.id)));
    if (Date.now() - finishedAt < WINDOW_MS / 2) expect(present).toEqual([3, 3, 3, 3, 3]);

    await until("the done and cancelled runs to be pruned", async () => (await Promise.all([cancelled, ...done].map((r) => rowsOf(r.id)))).every((n) => n === 0));
    expect(Date.now() - finishedAt, "not pruned before the window").toBeGreaterThanOrEqual(WINDOW_MS - 1000);
    expect((await done[0]!.state()).state).toBe("gone");
    // No window for failed runs, none for the other workflow: kept, after two windows more.
    await new Promise((resolve) => setTimeout(resolve, 2 * WINDOW_MS));
    expect([await rowsOf(failed.id), await rowsOf(other.id)]).toEqual([3, 3]);
    expect((await failed.state()).state).toBe("failed");
    expect((await other.state()).state).toBe("done");
  });
});
