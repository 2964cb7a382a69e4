/**
 * A large table's status: counted through indexes up to a cap, each count that reached it said to
 * be a lower bound. The threshold and the cap are made small here (a table of 12 rows is "large",
 * the cap 4 rows), so the test needs no large fill; the plans of the same statements on a million
 * rows are `status-plans.test.ts`'s.
 */
import { sampleOf, type StatusReport, type TableStatus } from "@sqlinbox/dashboard";
import { describe, expect, test } from "vitest";
import { openDatabase, type OpenedDatabase } from "../src/connect.js";
import type { StatusCounting } from "../src/inspect/capped.js";
import { readTableStatus } from "../src/inspect/status.js";
import { resolveTables } from "../src/queue-tables.js";
import { ExitCode } from "../src/exit-codes.js";
import { statusText } from "../src/render/status-text.js";
import { createQueue, ENGINES, insertRows, uniqueName, type TestDatabase, useTestDatabase } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

describe.each(ENGINES)("a large table's status on %s", (_name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });

  /** Lease table, one group: 3 ready, 1 leased (live), 2 delayed, 6 done; a dead-letter group `dead` of 0 rows. */
  async function filled(): Promise<string> {
    const jobs = uniqueName("st_capped");
    tables.push(await createQueue(t, jobs, { lease: true, delay: true, done: true }));
    const { now } = t.types;
    await insertRows(t, jobs, [
      { payload: "{}", grp: "a", created_at: now(-60_000) },
      { payload: "{}", grp: "a", created_at: now(-50_000) },
      { payload: "{}", grp: "a", created_at: now(-40_000), locked_until: now(30_000), attempt: 2 },
      { payload: "{}", grp: "a", created_at: now(-30_000) },
      { payload: "{}", grp: "a", created_at: now(-20_000), retry_after: now(600_000), attempt: 3 },
      { payload: "{}", grp: "a", created_at: now(-10_000), retry_after: now(600_000), attempt: 3 },
      ...Array.from({ length: 6 }, () => ({ payload: "{}", grp: "a", created_at: now(-90_000), processed_at: now(-5000) })),
    ]);
    return jobs;
  }

  async function statusOf(table: string, counting?: StatusCounting): Promise<TableStatus> {
    const opened: OpenedDatabase = await openDatabase(t.url);
    try {
      const [queue] = await resolveTables(opened, { tables: [table] });
      const now = opened.now();
      return await readTableStatus(opened, queue!, {
        now,
        since: new Date(now.getTime() - 60_000),
        expiringWithinMs: 60_000,
        expiringLimit: 20,
        ...(counting === undefined ? {} : { counting }),
      });
    } finally {
      await opened.db.destroy();
    }
  }

  test("under the cap every count is exact and equals the one-pass count; at the cap the counts read as at least", async () => {
    const jobs = await filled();
    const exact = await statusOf(jobs);
    expect(exact.capped).toBeUndefined();
    expect(exact.totals).toMatchObject({ ready: 3, inWork: 1, delayed: 2, done: 6 });

    // Large (12 ids ≥ 10), the cap above every state: the same numbers, none a lower bound.
    const roomy = await statusOf(jobs, { largeRows: 10, cap: 100 });
    expect(roomy.capped).toEqual({ cap: 100, estimatedRows: 12, atLeast: [] });
    // The same numbers, the oldest age read a moment later.
    const ageless = (s: TableStatus) => s.groups.map(({ oldestAgeMs, ...g }) => ({ ...g, oldest: Math.round((oldestAgeMs ?? 0) / 10_000) }));
    expect(ageless(roomy)).toEqual(ageless(exact));
    expect(roomy.expiringLeases.map((l) => l.attempt)).toEqual([1]);
    expect(roomy.notes).toContain("large table (about 12 rows by its ids): each count read through an index, up to 100 rows; none reached it, so every number is exact");

    // Cap 4: the sample is the first 4 rows not done in claim order (never-delayed first, then id):
    // 3 ready and the leased one; the delayed rows come after it. Done stops at 4 of its 6.
    const capped = await statusOf(jobs, { largeRows: 10, cap: 4 });
    expect(capped.capped).toEqual({ cap: 4, estimatedRows: 12, atLeast: ["ready", "inWork", "delayed", "done", "oldestAgeMs", "attempts", "expiringLeases"] });
    expect(capped.totals).toMatchObject({ ready: 3, inWork: 1, delayed: 0, done: 4 });
    // The attempts of the sample only: the delayed rows' third attempt is not in it.
    expect(capped.groups[0]?.attempts).toEqual([
      { attempt: 0, rows: 3 },
      { attempt: 1, rows: 1 },
    ]);
    expect(capped.notes.some((n) => n.includes("a number shown with + reached it and is a lower bound"))).toBe(true);

    // The text and the page say "at least": `3+`; the exact read shows plain numbers.
    const report: StatusReport = { at: new Date().toISOString(), engine: t.name, tables: [capped] };
    expect(statusText(report, 60_000)).toMatch(/\ba\s+3\+\s+1\+\s+0\+\s+—\s+4\+\s+1m 0\ds\+\s+0:3 1:1 \(\+\)/);
    expect(statusText({ ...report, tables: [exact] }, 60_000)).toMatch(/\ba\s+3\s+1\s+2\s+—\s+6\s/);
  });

  test("the bin's --large-table and --count-cap choose the same capped read; a value that is not a positive whole number is refused", { timeout: 30_000 }, async () => {
    const jobs = await filled();
    const report = await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs, "--large-table", "10", "--count-cap", "4"]);
    expect(report.tables[0]?.capped).toEqual({ cap: 4, estimatedRows: 12, atLeast: ["ready", "inWork", "delayed", "done", "oldestAgeMs", "attempts", "expiringLeases"] });
    expect(report.tables[0]?.totals).toMatchObject({ ready: 3, inWork: 1, delayed: 0, done: 4 });
    // The defaults: 12 rows is not a large table, so every count is exact.
    const plain = await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs]);
    expect(plain.tables[0]?.capped).toBeUndefined();
    expect(plain.tables[0]?.totals).toMatchObject({ ready: 3, inWork: 1, delayed: 2, done: 6 });
    const refused = await sqlinbox(["status", "--url", t.url, "--table", jobs, "--count-cap", "0"]);
    expect(refused.code).toBe(ExitCode.usage);
    expect(refused.stderr).toContain('--count-cap takes a positive whole number, got "0"');
  });

  test("fifo groups (a head per group): under the cap the same ready and waiting rows as the one-pass count", async () => {
    const jobs = uniqueName("st_capped_fifo");
    tables.push(await createQueue(t, jobs, { lease: true, delay: true }));
    const { now } = t.types;
    await insertRows(t, jobs, [
      { payload: "{}", grp: "a", locked_until: now(30_000) },
      { payload: "{}", grp: "a" },
      { payload: "{}", grp: "a" },
      { payload: "{}", grp: "b" },
      { payload: "{}", grp: "b" },
      { payload: "{}", grp: "b", retry_after: now(600_000) },
    ]);
    const opened = await openDatabase(t.url);
    try {
      const [queue] = await resolveTables(opened, { tables: [jobs], fifo: true });
      const now = opened.now();
      const options = { now, since: new Date(now.getTime() - 60_000), expiringWithinMs: 60_000, expiringLimit: 20 };
      const shape = (s: TableStatus) => s.groups.map((g) => [g.group, g.ready, g.waiting, g.inWork, g.delayed]);
      const exact = await readTableStatus(opened, queue!, options);
      expect(shape(exact)).toEqual([
        ["a", 0, 2, 1, 0],
        ["b", 1, 1, 0, 1],
      ]);
      const capped = await readTableStatus(opened, queue!, { ...options, counting: { largeRows: 5, cap: 100 } });
      expect(capped.capped?.atLeast).toEqual([]);
      expect(shape(capped)).toEqual(shape(exact));
    } finally {
      await opened.db.destroy();
    }
  });

  // SQLite has no row locks, so no row-lock probe to bound: skipped there.
  test.skipIf(_name === "sqlite")("row lock: a large table's probe reads at most the cap, and is not run once the rows not done pass it", async () => {
    const jobs = await filled();
    // The row-lock form: a table without a lease column (the lease rows read as ready here).
    const opened = await openDatabase(t.url);
    try {
      const [queue] = await resolveTables(opened, { tables: [jobs] });
      const { lease: _lease, ...spec } = queue!.spec;
      const rowLock = { ...queue!, spec: { ...spec, form: "rowLock" as const, columns: spec.columns.filter((c) => c.role !== "lease") } };
      const now = opened.now();
      const options = { now, since: new Date(now.getTime() - 60_000), expiringWithinMs: 60_000, expiringLimit: 20 };
      const roomy = await readTableStatus(opened, rowLock, { ...options, counting: { largeRows: 10, cap: 100 } });
      expect(roomy.totals).toMatchObject({ ready: 4, inWork: 0, delayed: 2 });
      expect(roomy.capped?.atLeast).toEqual([]);
      const full = await readTableStatus(opened, rowLock, { ...options, counting: { largeRows: 10, cap: 4 } });
      expect(full.totals.inWork).toBeNull();
      expect(full.notes.some((n) => n.startsWith("in work: not probed (a large table with over 4 rows not done"))).toBe(true);
    } finally {
      await opened.db.destroy();
    }
  });
});

test("the charts: a table whose ack deletes rows has no throughput while its backlog is capped; processed counts keep theirs", () => {
  const base = (at: string, highWater: number, capped: boolean): StatusReport => ({
    at,
    engine: "postgres",
    tables: [
      {
        table: "jobs",
        form: "lease",
        groups: [],
        totals: { ready: 4, inWork: 0, waiting: null, delayed: 0, done: null, dead: null, oldestAgeMs: null },
        expiringLeases: [],
        settled: { kind: "idHighWater", highWater },
        deadLetters: [],
        notes: [],
        ...(capped ? { capped: { cap: 4, estimatedRows: 1000, atLeast: ["ready" as const] } } : {}),
      },
    ],
  });
  const exact = sampleOf(base("2024-01-01T00:00:10Z", 120, false), base("2024-01-01T00:00:00Z", 100, false));
  expect(exact.tables.jobs?.finishedPerSecond).toBe(2);
  const capped = sampleOf(base("2024-01-01T00:00:10Z", 120, true), base("2024-01-01T00:00:00Z", 100, true));
  expect(capped.tables.jobs?.finishedPerSecond).toBeNull();
  expect(capped.tables.jobs?.finishedUnknown).toMatch(/counted up to a cap/);
});
