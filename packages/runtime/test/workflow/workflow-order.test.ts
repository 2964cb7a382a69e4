/**
 * The order workflow on every engine and form: a run's first step is published when it starts, each
 * later step when its last dependency is acked (its payload built from the typed results), and the
 * run ends done with every step's result. A run started in the caller's transaction exists only if it commits.
 */
import { payloadOf, workflow } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createTables, decoded, rowsOf, stepTable } from "./support.js";

describe.each(matrix)("an order workflow on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("each step runs once its dependencies are done, with their results; the run ends with every result", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfo").toLowerCase();
    const Charges = stepTable<{ orderId: string }, { id: string; cents: number }>(`${prefix}_charge`, form);
    const Ships = stepTable<{ chargeId: string }, { tracking: string }>(`${prefix}_ship`, form);
    const Mails = stepTable<{ text: string }, null>(`${prefix}_mail`, form);
    await createTables(db, [Charges, Ships, Mails], closers);
    const Order = workflow("order", payloadOf<{ orderId: string }>())
      .step("charge", Charges, (input) => ({ orderId: input.orderId }))
      .step("ship", Ships, { after: ["charge"] }, (_, { charge }) => ({ chargeId: charge?.id ?? "none" }))
      .step("mail", Mails, { after: ["charge", "ship"] }, (input, { charge, ship }) => ({ text: `${input.orderId}: ${charge?.cents} cents, ${ship?.tracking}` }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Charges, "charge")
      .route(Ships, "ship")
      .route(Mails, "mail")
      .workflow(Order);
    closers.push(() => broker.close());
    const seen: string[] = [];
    const app = await new App({ name: "wf-order", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(
            subscriber(InboxQueue.of(Charges, "charge").pollInterval(20), async (job, ctx) => {
              seen.push(`charge ${job.orderId}`);
              return ctx.ack({ id: `ch-${job.orderId}`, cents: 1250 });
            }),
          )
          .include(
            subscriber(InboxQueue.of(Ships, "ship").pollInterval(20), async (job, ctx) => {
              seen.push(`ship ${job.chargeId}`);
              return ctx.ack({ tracking: `tr-${job.chargeId}` });
            }),
          )
          .include(
            subscriber(InboxQueue.of(Mails, "mail").pollInterval(20), async (job) => {
              seen.push(`mail ${job.text}`);
            }),
          ),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Order, { orderId: "o1" });
    const results = await run.finished({ timeoutMs: 20_000, pollMs: 20 });
    expect(results).toEqual({ charge: { id: "ch-o1", cents: 1250 }, ship: { tracking: "tr-ch-o1" }, mail: null });
    expect(seen).toEqual(["charge o1", "ship ch-o1", "mail o1: 1250 cents, tr-ch-o1"]);
    expect(await run.state()).toMatchObject({ state: "done", steps: { charge: "done", ship: "done", mail: "done" } });
    // One job per step, each acked.
    for (const table of [Charges.table, Ships.table, Mails.table]) {
      const rows = await rowsOf(db, table);
      expect(rows).toHaveLength(1);
      expect(rows[0]?.processed_at).not.toBeNull();
    }
    expect(decoded((await rowsOf(db, Ships.table))[0]?.payload)).toEqual({ chargeId: "ch-o1" });

    // In the caller's transaction: a rollback leaves no run and no job; a commit starts it.
    let rolledBack: string | undefined;
    await db
      .transaction()
      .execute(async (trx) => {
        rolledBack = (await broker.startWorkflow(Order, { orderId: "o2" }, { via: trx })).id;
        throw new Error("roll back");
      })
      .catch(() => undefined);
    expect(await broker.workflowRun(Order, rolledBack ?? "").state()).toEqual({ state: "gone" });
    expect(await rowsOf(db, Charges.table)).toHaveLength(1);
    const committed = await db.transaction().execute((trx) => broker.startWorkflow(Order, { orderId: "o3" }, { via: trx }));
    await expect(committed.finished({ timeoutMs: 20_000, pollMs: 20 })).resolves.toMatchObject({ ship: { tracking: "tr-ch-o3" } });
    const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM sqlinbox_workflows WHERE workflow_id = ${committed.id}`.execute(db);
    expect(Number(rows[0]?.n)).toBe(4);
  });
});
