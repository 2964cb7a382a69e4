import { describe, expect, test } from "vitest";
import { sampleOf } from "../src/sampler.js";
import type { StatusReport, TableStatus } from "../src/source.js";

function report(at: string, t: { ready: number; waiting?: number; inWork: number | null; delayed?: number; dead: number | null; newestId: number | null }): StatusReport {
  const table: TableStatus = {
    table: "jobs",
    form: "lease",
    groups: [],
    expiringLeases: [],
    deadLetters: [],
    notes: [],
    newestId: t.newestId,
    totals: { ready: t.ready, waiting: t.waiting ?? null, inWork: t.inWork, delayed: t.delayed ?? 0, dead: t.dead, done: null, oldestAgeMs: null },
  };
  return { at, engine: "postgres", tables: [table] };
}

describe("a sample from two status reads", () => {
  test("the first read has depth but no rates", () => {
    expect(sampleOf(report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 0, newestId: 10 }), null).tables.jobs).toEqual({
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
    ["20 written, backlog +10: 10 finished in 2 s", { ready: 15, inWork: 1, dead: 0, newestId: 30 }, 5, 0],
    ["nothing written, backlog -6: 6 finished", { ready: 0, inWork: 0, dead: 0, newestId: 10 }, 3, 0],
    ["2 dead-lettered from the backlog: failures, not finished", { ready: 3, inWork: 1, dead: 2, newestId: 10 }, 0, 1],
    ["ids that are not numbers: no throughput", { ready: 3, inWork: 1, dead: 0, newestId: null }, null, 0],
    ["fifo: rows waiting behind a head are backlog, not finished", { ready: 2, waiting: 4, inWork: 1, dead: 0, newestId: 11 }, 0, 0],
  ] as const)("%s", (_what, now, finished, failed) => {
    const before = report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 0, newestId: 10 });
    const sample = sampleOf(report("2026-01-01T00:00:02Z", now), before).tables.jobs!;
    expect([sample.finishedPerSecond, sample.failedPerSecond]).toEqual([finished, failed]);
  });
});

describe("an operator's move of dead letters is neither finished nor failed", () => {
  const before = report("2026-01-01T00:00:00Z", { ready: 5, inWork: 1, dead: 3, newestId: 10 });
  test.each([
    ["1 moved back by an insert whose id skipped 700 (ids of rolled-back inserts)", { ready: 6, inWork: 1, dead: 2, newestId: 710 }, { moved: 1, idJump: 700 }, 0, 0],
    ["2 moved back by an update (a dead group): no id growth", { ready: 7, inWork: 1, dead: 1, newestId: 10 }, { moved: 2, idJump: 0 }, 0, 0],
    ["the same window also has work: 4 written, 3 finished, 1 dead-lettered, 2 moved back", { ready: 7, inWork: 1, dead: 2, newestId: 16 }, { moved: 2, idJump: 2 }, 1.5, 0.5],
    ["a move whose id jump is unknown: no throughput for that window", { ready: 6, inWork: 1, dead: 2, newestId: 11 }, { moved: 1, idJump: null }, null, 0],
  ] as const)("%s", (_what, now, move, finished, failed) => {
    const sample = sampleOf(report("2026-01-01T00:00:02Z", now), before, new Map([["jobs", move]])).tables.jobs!;
    expect([sample.finishedPerSecond, sample.failedPerSecond]).toEqual([finished, failed]);
  });
});
