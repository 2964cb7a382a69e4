import { describe, expect, test } from "vitest";
import { capOf, commitsHandlerWrites, delayOf, finishOf, outcomeLabel, stepOf, undecodableMessage, writeStep, type StepWriter } from "../src/claim/settlement.js";
import { HandlerOutcome } from "../src/declare/outcome.js";

const writer: StepWriter<string, number, string> = {
  finish: (how, d, x) => `finish ${how} ${d} ${x}`,
  release: (delayMs, d, x) => `release ${delayMs} ${d} ${x}`,
  deadLetter: (reason, d, x) => `deadLetter ${reason} ${d} ${x}`,
};

describe("settlement steps", () => {
  test.each([
    [HandlerOutcome.ack(), { step: "finish", how: "ack" }, "finish ack row 7"],
    [HandlerOutcome.drop(), { step: "finish", how: "drop" }, "finish drop row 7"],
    [HandlerOutcome.retry(), { step: "release", delayMs: null }, "release null row 7"],
    [HandlerOutcome.retryAfter(250), { step: "release", delayMs: 250 }, "release 250 row 7"],
    [HandlerOutcome.retryAfter(0), { step: "release", delayMs: 0 }, "release 0 row 7"],
    [HandlerOutcome.deadLetter("bad"), { step: "deadLetter", reason: "bad" }, "deadLetter bad row 7"],
    [HandlerOutcome.deadLetter(), { step: "deadLetter", reason: undefined }, "deadLetter undefined row 7"],
  ])("%o is %o, written once by its writer", (outcome, step, written) => {
    expect(stepOf(outcome)).toEqual(step);
    expect(writeStep(outcome, writer, "row", 7)).toBe(written);
  });

  test("the questions other rooms ask of an outcome", () => {
    expect([HandlerOutcome.ack(), HandlerOutcome.drop(), HandlerOutcome.retry()].map(finishOf)).toEqual(["ack", "drop", undefined]);
    expect([HandlerOutcome.ack(), HandlerOutcome.drop(), HandlerOutcome.deadLetter()].map(commitsHandlerWrites)).toEqual([true, false, false]);
    expect([HandlerOutcome.retryAfter(5), HandlerOutcome.retry(), HandlerOutcome.ack()].map(delayOf)).toEqual([5, undefined, undefined]);
    expect(undecodableMessage(HandlerOutcome.drop())).toBe("payload cannot be decoded: row finished (drop) by the onDecodeError policy");
  });

  test("an outcome from outside the union is refused, never written as a retry", () => {
    expect(() => writeStep({ kind: "timeout" } as unknown as HandlerOutcome, writer, "row", 7)).toThrow(/no settlement step for an outcome of kind "timeout"/);
  });
});

describe("maxAttempts is a cap", () => {
  const reason = () => "Error: boom";
  const moved = HandlerOutcome.deadLetter("Error: boom");

  test.each([
    ["retry at the cap", HandlerOutcome.retry(), 3, 3, moved, HandlerOutcome.retry()],
    ["retryAfter past the cap", HandlerOutcome.retryAfter(250), 4, 3, moved, HandlerOutcome.retryAfter(250)],
    ["retry below the cap", HandlerOutcome.retry(), 2, 3, HandlerOutcome.retry(), undefined],
    ["an earlier dead letter stands", HandlerOutcome.deadLetter("early"), 1, 3, HandlerOutcome.deadLetter("early"), undefined],
    ["an ack at the cap stands", HandlerOutcome.ack(), 3, 3, HandlerOutcome.ack(), undefined],
    ["a drop at the cap stands", HandlerOutcome.drop(), 3, 3, HandlerOutcome.drop(), undefined],
    ["no maxAttempts: no cap", HandlerOutcome.retry(), 99, undefined, HandlerOutcome.retry(), undefined],
    ["no attempt column: no cap", HandlerOutcome.retry(), undefined, 3, HandlerOutcome.retry(), undefined],
  ])("%s", (_name, outcome, attempt, maxAttempts, written, overrode) => {
    expect(capOf(outcome, attempt, maxAttempts, reason)).toEqual({ outcome: written, overrode });
  });

  test("the reason is built only when the cap applies; outcomes are named as a log line writes them", () => {
    let built = 0;
    capOf(HandlerOutcome.retry(), 1, 3, () => String(++built));
    expect(built).toBe(0);
    expect(capOf(HandlerOutcome.retry(), 3, 3, () => String(++built)).outcome).toEqual(HandlerOutcome.deadLetter("1"));
    expect([HandlerOutcome.retry(), HandlerOutcome.retryAfter(5), HandlerOutcome.deadLetter("x")].map(outcomeLabel)).toEqual(["retry()", "retryAfter(5)", "deadLetter()"]);
  });
});
