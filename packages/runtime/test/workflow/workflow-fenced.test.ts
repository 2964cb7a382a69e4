/**
 * On the lease form a step's result and its release are fenced by the lease, on every engine: a handler
 * whose lease another claim took writes neither its ack, nor its result, nor the next step's job. The
 * row's next delivery does, once.
 */
import { payloadOf, workflow } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { until } from "../support/claim-forms.js";
import { engines, type TestEngine, unique } from "../support/engines.js";
import { countOf, createTables, rowsOf, stepTable } from "./support.js";

/** A lease deadline an hour ahead, in the column's own form: what another claim's stamp looks like. */
function stolenLease(engine: TestEngine): string {
  const at = new Date(Date.now() + 3_600_000).toISOString();
  return engine.engine === "mysql" ? at.replace("T", " ").replace("Z", "") : at;
}

describe.each(engines)("a step's release fenced by its lease on $name", (engine) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("a lost lease writes no result and releases nothing; the next delivery releases the next step once", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfl").toLowerCase();
    const Charges = stepTable<{ orderId: string }, { id: string }>(`${prefix}_charge`, "lease");
    const Ships = stepTable<{ chargeId: string }, null>(`${prefix}_ship`, "lease");
    await createTables(db, [Charges, Ships], closers);
    const Order = workflow("order_fenced", payloadOf<{ orderId: string }>())
      .step("charge", Charges, (input) => input)
      .step("ship", Ships, { after: ["charge"] }, (_, { charge }) => ({ chargeId: charge?.id ?? "" }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } })
      .route(Charges, "charge")
      .route(Ships, "ship")
      .workflow(Order);
    closers.push(() => broker.close());
    let deliveries = 0;
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const app = await new App({ name: "wf-fenced", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(
            subscriber(InboxQueue.of(Charges, "charge").pollInterval(20), async (job, ctx) => {
              deliveries++;
              if (deliveries === 1) await gate;
              return ctx.ack({ id: `ch-${deliveries}-${job.orderId}` });
            }),
          )
          .include(subscriber(InboxQueue.of(Ships, "ship").pollInterval(20), async () => {})),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Order, { orderId: "o1" });
    await until(() => deliveries === 1, 10_000, "the first delivery to start");
    // Another claim takes the row: its lease token is no longer this delivery's.
    await sql`UPDATE ${sql.id(Charges.table)} SET locked_until = ${stolenLease(engine)}`.execute(db);
    open();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await rowsOf(db, Charges.table))[0]).toMatchObject({ processed_at: null, result: null });
    expect(await countOf(db, Ships.table)).toBe(0);
    expect(await run.state()).toMatchObject({ state: "running", steps: { charge: "released", ship: "waiting" } });

    // That other claim's lease runs out: the row's next delivery acks it, and releases "ship" once.
    await sql`UPDATE ${sql.id(Charges.table)} SET locked_until = NULL`.execute(db);
    await expect(run.finished({ timeoutMs: 20_000, pollMs: 20 })).resolves.toEqual({ charge: { id: "ch-2-o1" }, ship: null });
    expect(deliveries).toBe(2);
    expect(await countOf(db, Ships.table)).toBe(1);
  });
});
