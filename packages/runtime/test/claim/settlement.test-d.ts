import { describe, expectTypeOf, test } from "vitest";
import { OUTCOME_STEPS, type StepTable, type StepWriter } from "../../src/claim/settlement.js";
import type { HandlerOutcome } from "../../src/declare/outcome.js";

/** A kind the runtime does not know yet (say, a timeout): what adding one to the union would be. */
interface TimeoutOutcome {
  readonly kind: "timeout";
  readonly afterMs: number;
}

describe("the outcome → step mapping", () => {
  test("maps every kind of HandlerOutcome", () => {
    expectTypeOf(OUTCOME_STEPS).toExtend<StepTable<HandlerOutcome>>();
    expectTypeOf<keyof typeof OUTCOME_STEPS>().toEqualTypeOf<HandlerOutcome["kind"]>();
  });

  test("a kind added to the union without a step does not compile", () => {
    // @ts-expect-error Property 'timeout' is missing: a new outcome kind needs its step in OUTCOME_STEPS
    const extended: StepTable<HandlerOutcome | TimeoutOutcome> = OUTCOME_STEPS;
    void extended;
  });

  test("a table that leaves a kind out does not compile", () => {
    // @ts-expect-error Property 'deadLetter' is missing
    const partial: StepTable<HandlerOutcome> = { ack: OUTCOME_STEPS.ack, drop: OUTCOME_STEPS.drop, retry: OUTCOME_STEPS.retry, retryAfter: OUTCOME_STEPS.retryAfter };
    void partial;
  });

  test("a form's writer must write every step", () => {
    // @ts-expect-error Property 'deadLetter' is missing: a form cannot leave a step unwritten
    const writer: StepWriter<unknown, unknown, void> = { finish: () => {}, release: () => {} };
    void writer;
  });
});
