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

  test("a summary names the rows it counted: rows of one claim whose settlements failed alike are each told", () => {
    const clock = new PausedClock(new Date(T0));
    const memory = new MemoryLogger();
    const logger = calmLogger(memory, clock);
    // Four rows of one lease claim share its deadline, so their LeaseLost errors read the same.
    const lost = () =>
      errorFields(Object.assign(new Error("the ack was not written: the row no longer holds this delivery's lease (2026-01-01T00:00:02.000Z)"), { code: "LeaseLost" }));
    for (const id of [11, 12, 13, 14]) logger.error({ ...lost(), id }, "settlement failed");
    expect(memory.records.map((r) => [r.message, r.fields.id])).toEqual([["settlement failed", 11]]);
    clock.fireDue(T0 + 3_000);
    expect(memory.find("no longer failing")[0]!.fields).toMatchObject({ ids: [12, 13, 14], repeats: 3 });

    // Still failing: each summary names the rows counted since the last line, the first 100 of them.
    for (let ms = 0; ms <= 31_000; ms += 100) {
      clock.fireDue(T0 + 10_000 + ms);
      logger.error({ ...lost(), id: 1000 + ms / 100 }, "settlement failed");
    }
    const summary = memory.find("still failing")[0]!;
    expect(summary.fields).toMatchObject({ repeats: 300 });
    expect(summary.fields["ids"]).toEqual(Array.from({ length: 100 }, (_, i) => 1001 + i));
    logger.error({ ...lost(), id: 2000 }, "settlement failed");
    logger.close();
    expect(memory.records.at(-1)!.message).toMatch(/until the stop: 11 more time/);
    expect(memory.records.at(-1)!.fields["ids"]).toEqual([...Array.from({ length: 10 }, (_, i) => 1301 + i), 2000]);

    // A failure that names no row gives its summary no ids.
    const plain = calmLogger(memory, clock);
    for (let i = 0; i < 3; i++) plain.error(errorFields(new Error("boom")), "claim failed");
    plain.close();
    expect(memory.records.at(-1)!.fields["ids"]).toBeUndefined();
  });
});
