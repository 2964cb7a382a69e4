/** The attempt a delivery reads, from the column its claim counted: one rule for the runtime and the operator tools. */
import { describe, expect, test } from "vitest";
import { deliveredAttempt } from "../../src/internal.js";

describe("deliveredAttempt", () => {
  test.each([
    [1, 0],
    [2, 1],
    ["3", 2],
    [5n, 4],
  ])("a column counted to %s delivers attempt %s", (counted, attempt) => {
    expect(deliveredAttempt(counted)).toBe(attempt);
  });
});
