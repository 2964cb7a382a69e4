/**
 * A step that fails on every engine and form: its job dead-lettered (or a fan-out child's) fails the run
 * in the same transaction as the move, the steps that wait for it are never released, and
 * `finished()` rejects with `WorkflowEnded`, naming the step and the reason.
 */
import { column, InboxSpec, payloadOf, workflow } from "@sqlinbox/core";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, WorkflowEnded, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { countOf, createTables, rowsOf, stepTable } from "./support.js";

describe.each(matrix)("a failing step on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("a dead-lettered step fails the run and holds what waits for it; a dead-lettered child fails its fan-out", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfx").toLowerCase();
    const Charges = stepTable<{ orderId: string; items: number }, number[]>(`${prefix}_charge`, form);
    const Parts = stepTable<{ item: number }, number>(`${prefix}_part`, form);
    const Ships = stepTable<{ parts: readonly (number | null)[] }, null>(`${prefix}_ship`, form);
    const DeadCharges = InboxSpec.table(`${prefix}_dead_charge`, column("id").type("bigint"))
      .payload(column("payload"), payloadOf<{ orderId: string; items: number }>())
      .lastError(column("last_error"));
    const DeadParts = InboxSpec.table(`${prefix}_dead_part`, column("id").type("bigint")).payload(column("payload"), payloadOf<{ item: number }>()).lastError(column("last_error"));
    await createTables(db, [Charges, Parts, Ships, DeadCharges, DeadParts], closers);
    const Order = workflow("order_fails", payloadOf<{ orderId: string; items: number }>())
      .step("charge", Charges, (input) => input)
      .each("part", Parts, { over: "charge" }, (_, item) => ({ item }))
      .step("ship", Ships, { after: ["part"] }, (_, { part }) => ({ parts: part }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Charges, "charge")
      .route(Parts, "part")
      .route(Ships, "ship")
      .workflow(Order);
    closers.push(() => broker.close());
    let shipped = 0;
    const app = await new App({ name: "wf-fail", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(
            subscriber(InboxQueue.of(Charges, "charge").pollInterval(20).deadLetter(DeadCharges), async (job, ctx) =>
              job.orderId === "declined" ? HandlerOutcome.deadLetter("card declined") : ctx.ack(Array.from({ length: job.items }, (_, i) => i)),
            ),
          )
          .include(
            subscriber(InboxQueue.of(Parts, "part").pollInterval(20).deadLetter(DeadParts), async (job, ctx) =>
              job.item === 1 ? HandlerOutcome.deadLetter("part 1 is out of stock") : ctx.ack(job.item),
            ),
          )
          .include(
            subscriber(InboxQueue.of(Ships, "ship").pollInterval(20), async () => {
              shipped++;
            }),
          ),
      )
      .start();
    closers.push(() => app.stop());

    const declined = await broker.startWorkflow(Order, { orderId: "declined", items: 1 });
    const failure = await declined.finished({ timeoutMs: 20_000, pollMs: 20 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowEnded);
    expect(failure).toMatchObject({ code: "WorkflowEnded", reason: "failed", failure: { step: "charge", item: null, reason: "card declined" } });
    expect((failure as Error).message).toContain('workflow "order_fails", run');
    expect((failure as Error).message).toContain('step "charge" failed: card declined');
    expect(await declined.state()).toEqual({
      state: "failed",
      steps: { charge: "failed", part: "waiting", ship: "waiting" },
      failure: { step: "charge", item: null, reason: "card declined" },
    });
    expect(await countOf(db, DeadCharges.table)).toBe(1);
    expect(await countOf(db, Charges.table)).toBe(0);
    expect(await rowsOf(db, Parts.table)).toEqual([]);

    const partly = await broker.startWorkflow(Order, { orderId: "o2", items: 3 });
    await expect(partly.finished({ timeoutMs: 20_000, pollMs: 20 })).rejects.toMatchObject({
      reason: "failed",
      failure: { step: "part", item: 1, reason: "part 1 is out of stock" },
    });
    // The other children still run and are acked; none releases the step after the fan-out.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await rowsOf(db, Parts.table)).filter((r) => r.processed_at !== null)).toHaveLength(2);
    expect(await partly.state()).toMatchObject({ state: "failed", steps: { charge: "done", part: "failed", ship: "waiting" } });
    expect(await rowsOf(db, Ships.table)).toEqual([]);
    expect(shipped).toBe(0);
  });
});
