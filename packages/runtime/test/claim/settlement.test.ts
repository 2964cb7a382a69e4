import { describe, expect, test } from "vitest";
import {
  commitsHandlerWrites,
  decideSettlement,
  delayOf,
  finishOf,
  outcomeLabel,
  type SettlementRules,
  snoozedFor,
  stepOf,
  undecodableMessage,
  writeStep,
  type StepWriter,
} from "../../src/claim/settlement.js";
import { HandlerOutcome } from "../../src/declare/outcome.js";

const writer: StepWriter<string, number, string> = {
  finish: (how, d, x) => `finish ${how} ${d} ${x}`,
  release: (delayMs, refund, d, x) => `release ${delayMs}${refund ? " refund" : ""} ${d} ${x}`,
  deadLetter: (reason, d, x) => `deadLetter ${reason} ${d} ${x}`,
};

/** A queue with a dead-letter destination, no cap, on a table that stores a delay: every outcome settles as it is. */
const asIs: SettlementRules = { maxAttempts: undefined, deadLetter: true, keepMs: 60_000, storesDelay: true };
const settled = (outcome: HandlerOutcome, rules: SettlementRules = asIs, attempt?: number) => decideSettlement(outcome, attempt, rules, () => "Error: boom");

describe("settlement steps", () => {
  test.each([
    [HandlerOutcome.ack(), { step: "finish", how: "ack" }, "finish ack row 7"],
    [HandlerOutcome.drop(), { step: "finish", how: "drop" }, "finish drop row 7"],
    [HandlerOutcome.retry(), { step: "release", delayMs: null, refund: false }, "release null row 7"],
    [HandlerOutcome.retryAfter(250), { step: "release", delayMs: 250, refund: false }, "release 250 row 7"],
    [HandlerOutcome.retryAfter(0), { step: "release", delayMs: 0, refund: false }, "release 0 row 7"],
    [HandlerOutcome.snooze(250), { step: "release", delayMs: 250, refund: true }, "release 250 refund row 7"],
    [HandlerOutcome.deadLetter("bad"), { step: "deadLetter", reason: "bad" }, "deadLetter bad row 7"],
    [HandlerOutcome.deadLetter(), { step: "deadLetter", reason: undefined }, "deadLetter undefined row 7"],
  ])("%o is %o, decided once and written by its writer", (outcome, step, written) => {
    expect(stepOf(outcome)).toEqual(step);
    const settlement = settled(outcome);
    expect(settlement).toEqual({ outcome, step });
    expect(writeStep(settlement, writer, "row", 7)).toBe(written);
  });

  test("the questions other rooms ask of a settlement", () => {
    expect([HandlerOutcome.ack(), HandlerOutcome.drop(), HandlerOutcome.retry()].map((o) => finishOf(settled(o)))).toEqual(["ack", "drop", undefined]);
    expect([HandlerOutcome.ack(), HandlerOutcome.drop(), HandlerOutcome.deadLetter()].map((o) => commitsHandlerWrites(settled(o)))).toEqual([true, false, false]);
    expect([HandlerOutcome.retryAfter(5), HandlerOutcome.retry(), HandlerOutcome.ack()].map((o) => delayOf(settled(o)))).toEqual([5, undefined, undefined]);
    expect(undecodableMessage(settled(HandlerOutcome.drop()))).toBe("payload cannot be decoded: row finished (drop) by the onDecodeError policy");
  });

  test("a snooze: named as a log line writes it, its delay read as a release's, and refused below 0 ms", () => {
    expect(outcomeLabel(HandlerOutcome.snooze(30))).toBe("snooze(30)");
    expect(delayOf(settled(HandlerOutcome.snooze(30)))).toBe(30);
    expect(snoozedFor(settled(HandlerOutcome.snooze(30)))).toBe(30);
    expect(snoozedFor(settled(HandlerOutcome.retryAfter(30)))).toBeUndefined();
    expect(settled(HandlerOutcome.snooze(30), { ...asIs, storesDelay: false }).parked).toBe(true);
    expect(() => HandlerOutcome.snooze(-1)).toThrow(RangeError);
  });

  test("an outcome from outside the union is refused, never written as a retry", () => {
    expect(() => settled({ kind: "timeout" } as unknown as HandlerOutcome)).toThrow(/no settlement step for an outcome of kind "timeout"/);
  });

  test("every ack settles as one value", () => {
    expect(settled(HandlerOutcome.ack())).toBe(settled({ kind: "ack" }, asIs, 3));
  });
});

describe("maxAttempts is a cap", () => {
  const moved = HandlerOutcome.deadLetter("Error: boom");

  test.each([
    ["retry at the cap", HandlerOutcome.retry(), 3, 3, moved, HandlerOutcome.retry()],
    ["retryAfter past the cap", HandlerOutcome.retryAfter(250), 4, 3, moved, HandlerOutcome.retryAfter(250)],
    ["retry below the cap", HandlerOutcome.retry(), 2, 3, HandlerOutcome.retry(), undefined],
    ["a snooze at the cap stands: it spends no attempt", HandlerOutcome.snooze(250), 3, 3, HandlerOutcome.snooze(250), undefined],
    ["a snooze past the cap stands", HandlerOutcome.snooze(0), 9, 3, HandlerOutcome.snooze(0), undefined],
    ["an earlier dead letter stands", HandlerOutcome.deadLetter("early"), 1, 3, HandlerOutcome.deadLetter("early"), undefined],
    ["an ack at the cap stands", HandlerOutcome.ack(), 3, 3, HandlerOutcome.ack(), undefined],
    ["a drop at the cap stands", HandlerOutcome.drop(), 3, 3, HandlerOutcome.drop(), undefined],
    ["no maxAttempts: no cap", HandlerOutcome.retry(), 99, undefined, HandlerOutcome.retry(), undefined],
    ["no attempt column: no cap", HandlerOutcome.retry(), undefined, 3, HandlerOutcome.retry(), undefined],
  ])("%s", (_name, outcome, attempt, maxAttempts, written, overrode) => {
    const settlement = settled(outcome, { ...asIs, maxAttempts }, attempt);
    expect({ outcome: settlement.outcome, capped: settlement.capped }).toEqual({ outcome: written, capped: overrode });
    expect(settlement.step).toEqual(stepOf(written));
  });

  test("the reason is built only when the cap applies; outcomes are named as a log line writes them", () => {
    let built = 0;
    const rules = { ...asIs, maxAttempts: 3 };
    decideSettlement(HandlerOutcome.retry(), 1, rules, () => String(++built));
    expect(built).toBe(0);
    expect(decideSettlement(HandlerOutcome.retry(), 3, rules, () => String(++built)).outcome).toEqual(HandlerOutcome.deadLetter("1"));
    expect([HandlerOutcome.retry(), HandlerOutcome.retryAfter(5), HandlerOutcome.deadLetter("x")].map(outcomeLabel)).toEqual(["retry()", "retryAfter(5)", "deadLetter()"]);
  });
});

describe("what else the decision settles", () => {
  test("a dead letter with no destination keeps the row, hidden for keepMs", () => {
    const settlement = settled(HandlerOutcome.deadLetter("bad"), { ...asIs, deadLetter: false });
    expect(settlement).toEqual({ outcome: HandlerOutcome.retryAfter(60_000), step: { step: "release", delayMs: 60_000, refund: false }, noDestination: true });
  });

  test("a delay the table stores in no column parks the row; a release at once or a table that stores it does not", () => {
    const noColumn = { ...asIs, storesDelay: false };
    expect(settled(HandlerOutcome.retryAfter(250), noColumn).parked).toBe(true);
    expect(settled(HandlerOutcome.retry(), noColumn).parked).toBeUndefined();
    expect(settled(HandlerOutcome.retryAfter(250)).parked).toBeUndefined();
    // A kept dead letter is a delay too.
    expect(settled(HandlerOutcome.deadLetter(), { ...noColumn, deadLetter: false })).toMatchObject({ noDestination: true, parked: true });
  });
});
