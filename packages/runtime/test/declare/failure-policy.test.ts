/** The default failure policies, table-tested without a database: pure functions from a failure to an outcome. */
import { describe, expect, it } from "vitest";
import { backoffCeiling, backoffMs, DEFAULT_BACKOFF, defaultOnDecodeError, defaultOnError, reasonOf, type FailureContext } from "../../src/declare/failure-policy.js";

const base: FailureContext = { subscription: "reports", table: "report_jobs", id: 7, deadLetter: false, maxAttempts: undefined, keepMs: 30_000 };
const withDead: FailureContext = { ...base, deadLetter: true, maxAttempts: 3 };
const boom = new Error("boom");

describe("backoff: full jitter under an exponential ceiling, capped", () => {
  it.each([
    [undefined, 1000],
    [0, 1000],
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [10, 512_000],
    [12, 2_048_000],
    [13, 3_600_000],
    [1000, 3_600_000],
  ])("attempt %s: ceiling %i ms", (attempt, ceiling) => {
    expect(backoffCeiling(attempt)).toBe(ceiling);
  });

  it.each([
    [0, 3, 0],
    [0.5, 3, 2000],
    [0.999, 3, 3996],
    [0.999, 1000, 3_596_400],
  ])("random %f at attempt %i: %i ms", (random, attempt, ms) => {
    expect(backoffMs(attempt, DEFAULT_BACKOFF, () => random)).toBe(ms);
  });
});

describe("defaultOnError", () => {
  const policy = defaultOnError(DEFAULT_BACKOFF, () => 0.5);
  it.each([
    ["no dead letter, attempt 1", base, 1, { kind: "retryAfter", ms: 500 }],
    ["no dead letter, attempt 50: still kept, at the cap", base, 50, { kind: "retryAfter", ms: 1_800_000 }],
    ["no attempt column", base, undefined, { kind: "retryAfter", ms: 500 }],
    ["dead letter declared, attempt 2 of 3", withDead, 2, { kind: "retryAfter", ms: 1000 }],
    ["dead letter declared, attempt 3 of 3", withDead, 3, { kind: "deadLetter", reason: "Error: boom" }],
    ["dead letter declared, past maxAttempts", withDead, 9, { kind: "deadLetter", reason: "Error: boom" }],
    ["dead letter without maxAttempts: a throw never moves it", { ...withDead, maxAttempts: undefined }, 9, { kind: "retryAfter", ms: 128_000 }],
  ] as const)("%s", (_name, ctx, attempt, outcome) => {
    expect(policy(boom, attempt, ctx)).toEqual(outcome);
  });
});

describe("defaultOnDecodeError: never loses a row", () => {
  it.each([
    ["no dead letter: kept, out of claims for keepMs", base, { kind: "retryAfter", ms: 30_000 }],
    ["dead letter declared: moved, the error recorded", withDead, { kind: "deadLetter", reason: "SyntaxError: bad json" }],
  ] as const)("%s", (_name, ctx, outcome) => {
    expect(defaultOnDecodeError(new SyntaxError("bad json"), 1, ctx)).toEqual(outcome);
  });
});

describe("reasonOf", () => {
  it.each([
    [new TypeError("x is undefined"), "TypeError: x is undefined"],
    ["a string", "a string"],
    [42, "42"],
  ])("%s", (error, reason) => {
    expect(reasonOf(error)).toBe(reason);
  });
});
