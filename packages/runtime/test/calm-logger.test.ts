import { describe, expect, test } from "vitest";
import { calmLogger } from "../src/calm-logger.js";
import { errorFields } from "../src/logger.js";
import { MemoryLogger } from "../src/testing/index.js";
import { PausedClock } from "../src/testing/paused-clock.js";

const T0 = Date.parse("2026-01-01T00:00:00Z");

describe("a failure that repeats is written once, then summarised", () => {
  test("every 100 ms for 65 s: the first line, a summary at 30 s and at 60 s, and a line once it stops", () => {
    const clock = new PausedClock(new Date(T0));
    const memory = new MemoryLogger();
    const logger = calmLogger(memory, clock);
    const missing = errorFields(Object.assign(new Error('relation "jobs" does not exist'), { code: "42P01" }));
    for (let ms = 0; ms <= 65_000; ms += 100) {
      clock.fireDue(T0 + ms);
      logger.error({ ...missing }, "claim failed; trying again after the poll interval");
    }
    // A different failure is written at once; a record without an error passes through.
    logger.error(errorFields(new Error("connect ECONNREFUSED")), "claim failed; trying again after the poll interval");
    logger.info({ n: 1 }, "report rendered");
    expect(memory.records.map((r) => [r.level, r.message])).toEqual([
      ["error", "claim failed; trying again after the poll interval"],
      ["error", "claim failed; trying again after the poll interval (still failing: 300 more time(s) in 30 s)"],
      ["error", "claim failed; trying again after the poll interval (still failing: 300 more time(s) in 30 s)"],
      ["error", "claim failed; trying again after the poll interval"],
      ["info", "report rendered"],
    ]);
    expect(memory.records[1]!.fields).toMatchObject({ repeats: 300, total: 301, err: { code: "42P01" } });

    // Quiet for 3 of its gaps (at least 2 s): one info line says it stopped, with the count since the last summary.
    clock.fireDue(T0 + 69_000);
    const stopped = memory.find("no longer failing");
    expect(stopped.map((r) => [r.level, r.message])).toEqual([
      ["info", "no longer failing: claim failed; trying again after the poll interval (seen 651 times over 65 s; none for 4 s)"],
    ]);
    expect(stopped[0]!.fields).toMatchObject({ repeats: 50, total: 651, err: { message: 'relation "jobs" does not exist' } });

    // Seen again later: written again, as a new failure.
    logger.error({ ...missing }, "claim failed; trying again after the poll interval");
    expect(memory.records.at(-1)!.message).toBe("claim failed; trying again after the poll interval");
    logger.close();
    expect(clock.pending).toBe(0);
  });

  test("close writes the count not yet written", () => {
    const clock = new PausedClock(new Date(T0));
    const memory = new MemoryLogger();
    const logger = calmLogger(memory.child({ subscription: "jobs" }), clock);
    for (let i = 0; i < 4; i++) logger.warn(errorFields(new Error("boom")), "lease extension failed; trying again");
    logger.close();
    expect(memory.records.map((r) => r.message)).toEqual(["lease extension failed; trying again", "lease extension failed; trying again (until the stop: 3 more time(s) in 1 s)"]);
    expect(memory.records[1]!.fields).toMatchObject({ subscription: "jobs", repeats: 3, total: 4 });
  });
});
