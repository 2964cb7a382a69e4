import { column, InboxSpec, payloadOf, resultOf, workflow } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker, type WorkflowRun } from "../../src/index.js";

interface Charge {
  readonly id: string;
}
const Charges = InboxSpec.table("charges", column("id").generated())
  .lease(column("locked_until"))
  .processedAt(column("processed_at"))
  .result(column("result"), resultOf<Charge>())
  .payload(column("payload"), payloadOf<{ orderId: string }>());
const Ships = InboxSpec.table("ships", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ chargeId: string }>());
const Order = workflow("order", payloadOf<{ orderId: string }>())
  .step("charge", Charges, (input) => ({ orderId: input.orderId }))
  .step("ship", Ships, { after: ["charge"] }, (_, { charge }) => ({ chargeId: charge?.id ?? "" }));
const broker = SqlBroker.fromUrl("sqlite::memory:").route(Charges, "charge").route(Ships, "ship").workflow(Order);

describe("a workflow run's types", () => {
  test("startWorkflow takes the workflow's input; finished() resolves with every step's typed result", () => {
    expectTypeOf(broker.startWorkflow(Order, { orderId: "o1" })).resolves.toEqualTypeOf<WorkflowRun<typeof Order>>();
    // @ts-expect-error the input is { orderId: string }
    void broker.startWorkflow(Order, { id: 1 });
    const run = broker.workflowRun(Order, "id");
    expectTypeOf(run.finished()).resolves.toEqualTypeOf<{ readonly charge: Charge | null; readonly ship: null }>();
  });

  test("a done state carries the results; a failed one the failure", async () => {
    const now = await broker.workflowRun(Order, "id").state();
    if (now.state === "done") expectTypeOf(now.results.charge).toEqualTypeOf<Charge | null>();
    if (now.state === "failed") expectTypeOf(now.failure.step).toEqualTypeOf<string>();
    if (now.state === "running") expectTypeOf(now.steps).toEqualTypeOf<Readonly<Record<"charge" | "ship", "waiting" | "released" | "done" | "failed" | "cancelled">>>();
    if (now.state === "cancelled") {
      expectTypeOf(now.steps.charge).toEqualTypeOf<"waiting" | "released" | "done" | "failed" | "cancelled">();
      // @ts-expect-error a cancelled run has no results
      void now.results;
    }
  });

  test("cancel() and broker.cancelWorkflow resolve to whether the run was cancelled; a run id is text", () => {
    expectTypeOf(broker.workflowRun(Order, "id").cancel()).resolves.toEqualTypeOf<boolean>();
    expectTypeOf(broker.cancelWorkflow(Order, "id")).resolves.toEqualTypeOf<boolean>();
    // @ts-expect-error a run's id is a string
    void broker.cancelWorkflow(Order, 17);
  });
});
