import { describe, expect, test } from "vitest";
import { sampleOf } from "../src/sampler.js";
import type { SettledCount, StatusReport, TableStatus } from "../src/source.js";

interface Read {
  readonly ready: number;
  readonly waiting?: number;
  readonly inWork: number | null;
  readonly delayed?: number;
  readonly dead: number | null;
  readonly settled: SettledCount;
}

const hw = (highWater: number): SettledCount => ({ kind: "idHighWater", highWater });
const processed = (since: string, rows: number): SettledCount => ({ kind: "processed", since, rows });

function report(at: string, t: Read): StatusReport {
  const table: TableStatus = {
    table: "jobs",
    form: "lease",
    groups: [],
    expiringLeases: [],
    deadLetters: [],
    notes: [],
    settled: t.settled,
    totals: { ready: t.ready, waiting: t.waiting ?? null, inWork: t.inWork, delayed: t.delayed ?? 0, dead: t.dead, done: null, oldestAgeMs: null },
  };
  return { at, engine: "postgres", tables: [table] };
}

describe("a sample from two status reads", () => {
  test("the first read of a table whose ack deletes rows has depth but no rates", () => {
    const first = sampleOf(report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 0, settled: hw(10) }), null);
    expect(first.from).toBe(first.at);
    expect(first.tables.jobs).toEqual({
      ready: 5,
      waiting: null,
      inWork: 1,
      delayed: 0,
      dead: 0,
      finishedPerSecond: null,
      failedPerSecond: null,
    });
  });
  test.each([
    ["20 inserted, backlog +10: 10 settled in 2 s", { ready: 15, inWork: 1, dead: 0, settled: hw(30) }, 5, 0],
    ["nothing inserted, backlog -6: 6 settled", { ready: 0, inWork: 0, dead: 0, settled: hw(10) }, 3, 0],
    // The operator's case: a table that drains between reads still reads the rows that passed through it.
    ["40 inserted and all settled, drained both times", { ready: 0, inWork: 0, dead: 0, settled: hw(50) }, 23, 0],
    ["2 dead-lettered from the backlog: failures, not settled", { ready: 3, inWork: 1, dead: 2, settled: hw(10) }, 0, 1],
    ["application-written ids: unknown, not 0", { ready: 3, inWork: 1, dead: 0, settled: { kind: "unknown", reason: "r" } }, null, 0],
    ["fifo: rows waiting behind a head are backlog, not settled", { ready: 2, waiting: 4, inWork: 1, dead: 0, settled: hw(11) }, 0, 0],
  ] as const)("%s", (_what, now, finished, failed) => {
    const before = report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 0, settled: hw(10) });
    const read = sampleOf(report("2026-01-01T00:00:02Z", now), before);
    expect(read.at - read.from).toBe(2000);
    const sample = read.tables.jobs!;
    expect([sample.finishedPerSecond, sample.failedPerSecond]).toEqual([finished, failed]);
  });

  test("a table that keeps processed rows reads the rows processed in the window, whatever its depth did", () => {
    const before = report("2026-01-01T00:00:00Z", { ready: 0, inWork: 0, dead: 0, settled: processed("2025-12-31T23:59:00Z", 0) });
    const now = report("2026-01-01T00:00:04Z", { ready: 0, inWork: 0, dead: 0, settled: processed("2026-01-01T00:00:00Z", 80) });
    expect(sampleOf(now, before).tables.jobs!.finishedPerSecond).toBe(20);
    // The first read counted over its own window (the last minute): a rate already.
    expect(sampleOf(before, null).tables.jobs!.finishedPerSecond).toBe(0);
  });

  test("an insert read between the id and the counts: one window reads it as settled, the next pays it back, and the sum over windows stays exact", () => {
    const t0 = report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 0, settled: hw(10) });
    // 4 rows inserted after this read's counts and before its id: 4 ids, no backlog growth yet.
    const t1 = report("2026-01-01T00:00:01Z", { ready: 5, inWork: 1, dead: 0, settled: hw(14) });
    const first = sampleOf(t1, t0).tables.jobs!;
    expect([first.finishedPerSecond, first.settledOwed]).toEqual([4, undefined]);
    // Next read: the 4 rows are counted, no new id: -4, read as 0 and owed.
    const t2 = report("2026-01-01T00:00:02Z", { ready: 9, inWork: 1, dead: 0, settled: hw(14) });
    const second = sampleOf(t2, t1).tables.jobs!;
    expect([second.finishedPerSecond, second.settledOwed]).toEqual([0, 4]);
    // Then 10 rows really settle (the backlog drains by 10): the window reads 6, the debt paid.
    const t3 = report("2026-01-01T00:00:03Z", { ready: 0, inWork: 0, dead: 0, settled: hw(14) });
    const third = sampleOf(t3, t2, new Map(), new Map([["jobs", second.settledOwed!]])).tables.jobs!;
    expect([third.finishedPerSecond, third.settledOwed]).toEqual([6, undefined]);
    expect(first.finishedPerSecond! + second.finishedPerSecond! + third.finishedPerSecond!).toBe(10);
    // Without the debt carried, the third window alone reads 10 and the sum 14: the bug the carry fixes.
    expect(sampleOf(t3, t2).tables.jobs!.finishedPerSecond).toBe(10);
  });

  test("unknown says why", () => {
    const read = report("2026-01-01T00:00:00Z", { ready: 0, inWork: 0, dead: 0, settled: { kind: "unknown", reason: "ids written by the application" } });
    expect(sampleOf(read, read).tables.jobs!.finishedUnknown).toBe("ids written by the application");
  });
});

describe("an operator's move of dead letters is neither settled nor failed", () => {
  const before = report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 3, settled: hw(10) });
  test.each([
    ["1 moved back by an insert whose id skipped 700 (ids of rolled-back inserts)", { ready: 6, inWork: 1, dead: 2, settled: hw(710) }, { moved: 1, idJump: 700 }, 0, 0],
    ["2 moved back by an update (a dead group): no id growth", { ready: 7, inWork: 1, dead: 1, settled: hw(10) }, { moved: 2, idJump: 0 }, 0, 0],
    ["the same window also has work: 4 inserted, 3 settled, 1 dead-lettered, 2 moved back", { ready: 7, inWork: 1, dead: 2, settled: hw(16) }, { moved: 2, idJump: 2 }, 1.5, 0.5],
    ["a move whose id jump is unknown: no throughput for that window", { ready: 6, inWork: 1, dead: 2, settled: hw(11) }, { moved: 1, idJump: null }, null, 0],
  ] as const)("%s", (_what, now, move, finished, failed) => {
    const sample = sampleOf(report("2026-01-01T00:00:02Z", now), before, new Map([["jobs", move]])).tables.jobs!;
    expect([sample.finishedPerSecond, sample.failedPerSecond]).toEqual([finished, failed]);
  });
});
