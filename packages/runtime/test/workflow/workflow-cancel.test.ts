/**
 * Cancel a run on every engine and form: while one step's handler runs and another step's job waits
 * in its queue (and a third waits for the first), `run.cancel()` aborts the running handler's
 * `ctx.signal`, removes the queued job, never publishes the waiting step, and marks the run and its
 * steps cancelled; `finished()` rejects with `WorkflowEnded` reason `cancelled`.
 */
import { workflow, payloadOf } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, WorkflowEnded, createControlTable, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { countOf, createTables, stepTable } from "./support.js";

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> => {
  for (const deadline = Date.now() + timeoutMs; !(await check()); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe.each(matrix)("cancelling a run on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("cancel while a step runs and others wait: the handler is signalled, nothing of the run runs or waits afterwards", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    await createControlTable(db);
    const prefix = unique("wfc").toLowerCase();
    const Slows = stepTable<{ n: number }, number>(`${prefix}_slow`, form);
    const Idles = stepTable<{ n: number }, number>(`${prefix}_idle`, form);
    const Nexts = stepTable<{ n: number }, number>(`${prefix}_next`, form);
    await createTables(db, [Slows, Idles, Nexts], closers);
    const Flow = workflow("flow_cancels", payloadOf<{ n: number }>())
      .step("slow", Slows, (input) => input)
      .step("idle", Idles, (input) => input)
      .step("next", Nexts, { after: ["slow"] }, (_, { slow }) => ({ n: slow ?? 0 }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Slows, "slow")
      .route(Idles, "idle")
      .route(Nexts, "next")
      .workflow(Flow);
    closers.push(() => broker.close());
    const calls: string[] = [];
    let aborted = false;
    let running = false;
    // No subscription of the idle step's table: its job waits in its queue.
    const app = await new App({ name: "wf-cancel", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(
            subscriber(InboxQueue.of(Slows, "slow").pollInterval(20), async (job, ctx) => {
              calls.push("slow");
              running = true;
              await new Promise<void>((resolve) => {
                if (ctx.signal.aborted) resolve();
                ctx.signal.addEventListener("abort", () => resolve(), { once: true });
                setTimeout(resolve, 3_000);
              });
              aborted = ctx.signal.aborted;
              running = false;
              return ctx.ack(job.n);
            }),
          )
          .include(
            subscriber(InboxQueue.of(Nexts, "next").pollInterval(20), async (job, ctx) => {
              calls.push("next");
              return ctx.ack(job.n);
            }),
          ),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Flow, { n: 7 });
    await until("the slow step to run", () => running);
    expect(await run.state()).toEqual({ state: "running", steps: { slow: "released", idle: "released", next: "waiting" } });
    expect(await countOf(db, Idles.table)).toBe(1);

    expect(await broker.cancelWorkflow(Flow, run.id)).toBe(true);
    expect(await run.state()).toEqual({ state: "cancelled", steps: { slow: "cancelled", idle: "cancelled", next: "cancelled" } });
    await until("the running handler to be signalled and end", () => !running);
    // SQLite's advisory keys live in the process that holds them: a cancel removes the row in work without signalling it.
    expect(aborted).toBe(!(engine.engine === "sqlite" && form === "advisory"));
    const ended = await run.finished({ timeoutMs: 5_000, pollMs: 20 }).catch((error: unknown) => error);
    expect(ended).toBeInstanceOf(WorkflowEnded);
    expect(ended).toMatchObject({ code: "WorkflowEnded", reason: "cancelled" });
    expect((ended as Error).message).toContain("the run was cancelled");

    // Nothing of the run waits in a queue (the slow job settled or removed, unprocessed rows none), and nothing runs after.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const waiting = async (table: string) => Number((await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)} WHERE processed_at IS NULL`.execute(db)).rows[0]?.n);
    expect(await waiting(Slows.table)).toBe(0);
    expect(await waiting(Idles.table)).toBe(0);
    expect(await countOf(db, Nexts.table)).toBe(0);
    expect(calls).toEqual(["slow"]);
    expect(await run.state()).toEqual({ state: "cancelled", steps: { slow: "cancelled", idle: "cancelled", next: "cancelled" } });
    // A second cancel finds the run ended.
    expect(await run.cancel()).toBe(false);
    expect(await broker.cancelWorkflow(Flow, "no-such-run")).toBe(false);
  });
});
