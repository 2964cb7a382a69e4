/** The plans of a run's start, acks and failures, without a database: what is written, in order. */
import { column, InboxSpec, payloadOf, resultOf, workflow } from "@sqlinbox/core";
import type { WorkflowRow } from "@sqlinbox/kysely-dialects";
import { describe, expect, test } from "vitest";
import { planDone, planFailed, planStart } from "../../src/workflow/run-plan.js";

const Jobs = InboxSpec.table("jobs", column("id").generated())
  .processedAt(column("processed_at"))
  .result(column("result"), resultOf<number[]>())
  .payload(column("payload"), payloadOf<{ n: number }>());

const W = workflow("w", payloadOf<{ n: number }>())
  .step("a", Jobs, (input) => ({ n: input.n }))
  .step("b", Jobs, (input) => ({ n: input.n + 1 }))
  .step("c", Jobs, { after: ["a", "b"] }, (_, { a, b }) => ({ n: (a?.length ?? 0) + (b?.length ?? 0) }))
  .each("d", Jobs, { over: "c" }, (_, item, _results, index) => ({ n: item * 10 + index }))
  .step("e", Jobs, { after: ["d"] }, (_, { d }) => ({ n: d.length }));

const row = (step: string, item: number, state: string, data: string | null = null): WorkflowRow => ({
  workflow_id: "r",
  workflow: "w",
  step,
  item,
  state,
  job_table: null,
  job_id: null,
  data,
});
const own = row("", -1, "running", '{"n":1}');

describe("a run's plans", () => {
  test("a start inserts the run and its steps, then publishes the steps that wait for nothing", () => {
    const writes = planStart(W, { n: 1 });
    expect(writes[0]).toMatchObject({ write: "insert" });
    expect(writes.slice(1)).toEqual([
      { write: "publish", step: "a", item: -1, route: "a", payload: { n: 1 } },
      { write: "publish", step: "b", item: -1, route: "b", payload: { n: 2 } },
    ]);
  });

  test("the first of two dependencies done releases nothing; the second releases the step, with both results", () => {
    const rows = [own, row("a", -1, "released"), row("b", -1, "released"), row("c", -1, "waiting"), row("d", -1, "waiting"), row("e", -1, "waiting")];
    expect(planDone(W, rows, "a", -1, "[1,2]")).toEqual([{ write: "change", step: "a", item: -1, from: "released", to: { state: "done", data: "[1,2]" } }]);
    rows[1] = row("a", -1, "done", "[1,2]");
    expect(planDone(W, rows, "b", -1, "[3]")).toEqual([
      { write: "change", step: "b", item: -1, from: "released", to: { state: "done", data: "[3]" } },
      { write: "publish", step: "c", item: -1, route: "c", payload: { n: 3 } },
    ]);
    // The same ack read twice (a step not released any more) plans nothing: no second release.
    rows[2] = row("b", -1, "done", "[3]");
    rows[3] = row("c", -1, "released");
    expect(planDone(W, rows, "b", -1, "[3]")).toEqual([]);
  });

  test("a fan-out publishes one child per item; the last child done finishes it with the results in item order", () => {
    const rows = [own, row("a", -1, "done", "[]"), row("b", -1, "done", "[]"), row("c", -1, "released"), row("d", -1, "waiting"), row("e", -1, "waiting")];
    expect(planDone(W, rows, "c", -1, "[4,5]").slice(1)).toEqual([
      { write: "change", step: "d", item: -1, from: "waiting", to: { state: "released" } },
      { write: "publish", step: "d", item: 0, route: "d", payload: { n: 40 } },
      { write: "publish", step: "d", item: 1, route: "d", payload: { n: 51 } },
    ]);
    const later = [...rows.slice(0, 3), row("c", -1, "done", "[4,5]"), row("d", -1, "released"), row("d", 0, "released"), row("d", 1, "done", "[7]"), rows[5] as WorkflowRow];
    expect(planDone(W, later, "d", 0, "[6]")).toEqual([
      { write: "change", step: "d", item: 0, from: "released", to: { state: "done", data: "[6]" } },
      { write: "change", step: "d", item: -1, from: "released", to: { state: "done", data: "[[6],[7]]" } },
      { write: "publish", step: "e", item: -1, route: "e", payload: { n: 2 } },
    ]);
  });

  test("an empty fan-out is done at once, and what waits for it is released in the same plan", () => {
    const rows = [own, row("a", -1, "done", "[]"), row("b", -1, "done", "[]"), row("c", -1, "released"), row("d", -1, "waiting"), row("e", -1, "waiting")];
    expect(planDone(W, rows, "c", -1, "[]").slice(1)).toEqual([
      { write: "change", step: "d", item: -1, from: "waiting", to: { state: "done", data: "[]" } },
      { write: "publish", step: "e", item: -1, route: "e", payload: { n: 0 } },
    ]);
  });

  test("the last step done finishes the run", () => {
    const rows = [own, row("a", -1, "done"), row("b", -1, "done"), row("c", -1, "done"), row("d", -1, "done", "[]"), row("e", -1, "released")];
    expect(planDone(W, rows, "e", -1, null).at(-1)).toEqual({ write: "change", step: "", item: -1, from: "running", to: { state: "done" } });
  });

  test("a failure fails the row, its fan-out and the run; what waits for it stays waiting", () => {
    const rows = [own, row("a", -1, "done"), row("b", -1, "done"), row("c", -1, "done", "[1]"), row("d", -1, "released"), row("d", 0, "released"), row("e", -1, "waiting")];
    const data = JSON.stringify({ step: "d", item: 0, reason: "boom" });
    expect(planFailed(rows, "d", 0, "boom")).toEqual([
      { write: "change", step: "d", item: 0, from: "released", to: { state: "failed", data } },
      { write: "change", step: "d", item: -1, from: "released", to: { state: "failed", data } },
      { write: "change", step: "", item: -1, from: "running", to: { state: "failed" } },
    ]);
  });

  test("a payload builder that throws fails the run, naming the step", () => {
    const Throws = workflow("t", payloadOf<number>())
      .step("a", Jobs, () => ({ n: 1 }))
      .step("b", Jobs, { after: ["a"] }, () => {
        throw new Error("no payload");
      });
    const writes = planDone(Throws, [row("", -1, "running", "1"), row("a", -1, "released"), row("b", -1, "waiting")], "a", -1, null);
    expect(writes.slice(-2)).toEqual([
      {
        write: "change",
        step: "b",
        item: -1,
        from: "waiting",
        to: { state: "failed", data: JSON.stringify({ step: "b", item: null, reason: 'the payload builder of step "b" threw: no payload' }) },
      },
      { write: "change", step: "", item: -1, from: "running", to: { state: "failed" } },
    ]);
  });

  test("resume: the ack of a failed step's job makes it done, the run runs again, and the step after it is released once", () => {
    const failure = JSON.stringify({ step: "b", item: null, reason: "down" });
    const rows = [
      row("", -1, "failed", '{"n":1}'),
      row("a", -1, "done", "[1]"),
      row("b", -1, "failed", failure),
      row("c", -1, "waiting"),
      row("d", -1, "waiting"),
      row("e", -1, "waiting"),
    ];
    expect(planDone(W, rows, "b", -1, "[2,3]")).toEqual([
      { write: "change", step: "b", item: -1, from: "failed", to: { state: "done", data: "[2,3]" } },
      { write: "change", step: "", item: -1, from: "failed", to: { state: "running" } },
      { write: "publish", step: "c", item: -1, route: "c", payload: { n: 3 } },
    ]);
    // A failed step's job dead-lettered again changes nothing: the step and the run stay failed.
    expect(planFailed(rows, "b", -1, "down again")).toEqual([]);
  });

  test("resume of a fan-out child: the child done, its fan-out released again, done with every result once the last is", () => {
    const failure = JSON.stringify({ step: "d", item: 1, reason: "down" });
    const rows = [
      row("", -1, "failed", '{"n":1}'),
      row("a", -1, "done", "[1]"),
      row("b", -1, "done", "[1]"),
      row("c", -1, "done", "[1,2]"),
      row("d", -1, "failed", failure),
      row("d", 0, "done", "[10]"),
      row("d", 1, "failed", failure),
      row("e", -1, "waiting"),
    ];
    expect(planDone(W, rows, "d", 1, "[20]")).toEqual([
      { write: "change", step: "d", item: 1, from: "failed", to: { state: "done", data: "[20]" } },
      { write: "change", step: "d", item: -1, from: "failed", to: { state: "released", data: null } },
      { write: "change", step: "d", item: -1, from: "released", to: { state: "done", data: "[[10],[20]]" } },
      { write: "change", step: "", item: -1, from: "failed", to: { state: "running" } },
      { write: "publish", step: "e", item: -1, route: "e", payload: { n: 2 } },
    ]);
  });

  test("a step still failed keeps the run failed: another failed step's resume releases nothing", () => {
    const rows = [own, row("a", -1, "failed", "{}"), row("b", -1, "failed", "{}"), row("c", -1, "waiting"), row("d", -1, "waiting"), row("e", -1, "waiting")];
    rows[0] = row("", -1, "failed", '{"n":1}');
    expect(planDone(W, rows, "a", -1, "[1]")).toEqual([{ write: "change", step: "a", item: -1, from: "failed", to: { state: "done", data: "[1]" } }]);
  });

  test("a cancelled run: an ack or a dead letter of its jobs plans nothing", () => {
    const rows = [
      row("", -1, "cancelled", '{"n":1}'),
      row("a", -1, "cancelled"),
      row("b", -1, "done", "[1]"),
      row("c", -1, "cancelled"),
      row("d", -1, "cancelled"),
      row("e", -1, "cancelled"),
    ];
    expect(planDone(W, rows, "a", -1, "[1]")).toEqual([]);
    expect(planFailed(rows, "a", -1, "down")).toEqual([]);
  });
});
