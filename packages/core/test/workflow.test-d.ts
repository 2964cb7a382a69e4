import { describe, expectTypeOf, test } from "vitest";
import { column, InboxSpec, payloadOf, resultOf, workflow, type WorkflowResults, type WorkflowSteps } from "../src/index.js";

interface Charge {
  readonly id: string;
  readonly cents: number;
}
const ChargeJobs = InboxSpec.table("charge_jobs", column("id").generated())
  .lease(column("locked_until"))
  .processedAt(column("processed_at"))
  .result(column("result"), resultOf<Charge>())
  .payload(column("payload"), payloadOf<{ orderId: string }>());
const ShipJobs = InboxSpec.table("ship_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ chargeId: string }>());
const SplitJobs = InboxSpec.table("split_jobs", column("id").generated())
  .lease(column("locked_until"))
  .processedAt(column("processed_at"))
  .result(column("result"), resultOf<string[]>())
  .payload(column("payload"), payloadOf<{ orderId: string }>());
const PartJobs = InboxSpec.table("part_jobs", column("id").generated())
  .lease(column("locked_until"))
  .processedAt(column("processed_at"))
  .result(column("result"), resultOf<number>())
  .payload(column("payload"), payloadOf<{ part: string; index: number }>());
const SumJobs = InboxSpec.table("sum_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ total: number }>());

describe("workflow: what compiles", () => {
  test("a step's publish options: one value, or a function of the input and the results it reads (per child on a fan-out)", () => {
    workflow("order", payloadOf<{ orderId: string }>())
      .step("charge", ChargeJobs, { publish: { priority: 5, delay: 1000 } }, (input) => ({ orderId: input.orderId }))
      .step(
        "ship",
        ShipJobs,
        {
          after: ["charge"],
          publish: (input, { charge }) => {
            expectTypeOf(input).toEqualTypeOf<{ orderId: string }>();
            expectTypeOf(charge).toEqualTypeOf<Charge | null>();
            return { headers: { order: input.orderId }, columns: { customer: charge?.id } };
          },
        },
        (_, { charge }) => ({ chargeId: charge?.id ?? "" }),
      );
    workflow("split", payloadOf<{ orderId: string }>())
      .step("split", SplitJobs, (input) => input)
      .each(
        "part",
        PartJobs,
        {
          over: "split",
          publish: (_, item, __, index) => {
            expectTypeOf(item).toEqualTypeOf<string>();
            expectTypeOf(index).toEqualTypeOf<number>();
            return { priority: index };
          },
        },
        (_, part, __, index) => ({ part, index }),
      );
  });

  test("a step reads its dependency's typed result", () => {
    const Order = workflow("order", payloadOf<{ orderId: string }>())
      .step("charge", ChargeJobs, (input) => {
        expectTypeOf(input).toEqualTypeOf<{ orderId: string }>();
        return { orderId: input.orderId };
      })
      .step("ship", ShipJobs, { after: ["charge"] }, (_, { charge }) => {
        expectTypeOf(charge).toEqualTypeOf<Charge | null>();
        return { chargeId: charge?.id ?? "" };
      });
    expectTypeOf<keyof WorkflowSteps<typeof Order>>().toEqualTypeOf<"charge" | "ship">();
    expectTypeOf<WorkflowResults<WorkflowSteps<typeof Order>>>().toEqualTypeOf<{ readonly charge: Charge | null; readonly ship: null }>();
  });

  test("each fans out over an array result, and a dependent reads every child's result in order", () => {
    const Parts = workflow("parts", payloadOf<{ orderId: string }>())
      .step("split", SplitJobs, (input) => ({ orderId: input.orderId }))
      .each("part", PartJobs, { over: "split" }, (_input, item, _results, index) => {
        expectTypeOf(item).toEqualTypeOf<string>();
        return { part: item, index };
      })
      .step("sum", SumJobs, { after: ["part"] }, (_, { part }) => {
        expectTypeOf(part).toEqualTypeOf<ReadonlyArray<number | null>>();
        return { total: part.reduce<number>((a, b) => a + (b ?? 0), 0) };
      });
    expectTypeOf(Parts.name).toEqualTypeOf<"parts">();
  });
});

describe("workflow: what does not compile, and which sentence says why", () => {
  const start = workflow("order", payloadOf<{ orderId: string }>()).step("charge", ChargeJobs, (input) => ({ orderId: input.orderId }));

  test("a payload builder that does not return the table's payload", () => {
    // @ts-expect-error the payload of ship_jobs has a chargeId
    start.step("ship", ShipJobs, { after: ["charge"] }, () => ({ orderId: "x" }));
  });

  test("a dependency on a step that does not exist, or comes later", () => {
    // @ts-expect-error "bill" is no step
    start.step("ship", ShipJobs, { after: ["bill"] }, () => ({ chargeId: "x" }));
    const w = workflow("w", payloadOf<number>());
    // @ts-expect-error "ship" comes later: a step can only wait for one declared before it
    const packed = w.step("pack", ShipJobs, { after: ["ship"] }, () => ({ chargeId: "x" }));
    packed.step("ship", ShipJobs, () => ({ chargeId: "x" }));
  });

  test("reading the result of a step whose table has no result column", () => {
    const shipped = start.step("ship", ShipJobs, { after: ["charge"] }, () => ({ chargeId: "x" }));
    // @ts-expect-error ship_jobs has no result column: nothing to read
    shipped.step("sum", SumJobs, { after: ["ship"] }, (_, { ship }) => ({ total: ship.length }));
    // Depending on it for its order alone compiles.
    shipped.step("sum", SumJobs, { after: ["ship"] }, () => ({ total: 1 }));
  });

  test("a fan-out over a result that is not an array", () => {
    // @ts-expect-error charge's result is an object
    start.each("part", PartJobs, { over: "charge" }, () => ({ part: "x", index: 0 }));
  });

  test("a step name used twice", () => {
    // @ts-expect-error "charge" is taken
    start.step("charge", ChargeJobs, (input) => ({ orderId: input.orderId }));
  });

  test("publish options of the wrong type", () => {
    // @ts-expect-error a priority is a number
    start.step("ship", ShipJobs, { after: ["charge"], publish: { priority: "high" } }, () => ({ chargeId: "x" }));
    // @ts-expect-error a dedup key is not among a step's publish options
    start.step("ship", ShipJobs, { after: ["charge"], publish: { key: "k" } }, () => ({ chargeId: "x" }));
    // @ts-expect-error the function gets the run's input, whose orderId is text
    start.step("ship", ShipJobs, { after: ["charge"], publish: (input) => ({ priority: input.orderId }) }, () => ({ chargeId: "x" }));
  });
});
