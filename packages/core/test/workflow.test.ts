import { describe, expect, test } from "vitest";
import { column, InboxSpec, payloadOf, workflow } from "../src/index.js";

const Jobs = InboxSpec.table("jobs", column("id").generated()).payload(column("payload"), payloadOf<{ n: number }>());
// A description the compiler cannot see through (built from untyped values, as a JavaScript caller would).
const loose = workflow("w", payloadOf<number>()) as unknown as { step(...args: unknown[]): unknown };

describe("workflow: what the description holds", () => {
  test("steps in order, with their routes and dependencies", () => {
    const w = workflow("order", payloadOf<number>())
      .step("a", Jobs, (n) => ({ n }))
      .step("b", Jobs, { after: ["a"], route: "jobs.b" }, () => ({ n: 1 }));
    expect(w.name).toBe("order");
    expect(w.steps.map((s) => [s.name, s.route, s.after, s.over])).toEqual([
      ["a", "a", [], undefined],
      ["b", "jobs.b", ["a"], undefined],
    ]);
    expect(Object.isFrozen(w.steps)).toBe(true);
  });

  test("what the compiler refuses is refused at run time too, naming the step", () => {
    expect(() => loose.step("a", Jobs, { after: ["z"] }, () => ({ n: 1 }))).toThrow('workflow "w", step "a": depends on "z", which is no step declared before it');
    const one = workflow("w", payloadOf<number>()).step("a", Jobs, () => ({ n: 1 })) as unknown as { step(...args: unknown[]): unknown };
    expect(() => one.step("a", Jobs, () => ({ n: 1 }))).toThrow('workflow "w", step "a": a step of this name is declared already');
    expect(() => loose.step("a", Jobs, {})).toThrow("the payload builder must be a function");
    expect(() => loose.step("a-b", Jobs, () => ({ n: 1 }))).toThrow(/step name "a-b" cannot be an identifier/);
  });
});
