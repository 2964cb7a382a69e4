import type { BenchSettings } from "../config.js";
import { connect, countRows, insertJobs, recreateTable, type AnyDb } from "../db.js";
import { JobTracker, sleep, waitUntilEmpty, withTimeout } from "../jobs.js";
import { report } from "../report-helpers.js";
import { short, table } from "../report.js";
import { fmt, summarize, type Summary } from "../stats.js";
import { buildApp, loadRuntime, startApp, type Runtime } from "../systems/sqlinbox.js";
import type { EngineName } from "../types.js";
import { ENGINES } from "../cases.js";

export interface LongJobsResult {
  readonly id: string;
  readonly engine: EngineName;
  readonly notAvailable?: string;
  readonly error?: string;
  readonly settings?: BenchSettings["longJobs"];
  /** Throughput as a share of the ideal `workers × 1000 / sleepMs` jobs per second. */
  readonly shareOfIdeal?: Summary;
  readonly jobsPerSec?: Summary;
  /** Lease-extension statements per second while draining (counted from the SQL the broker ran). */
  readonly extensionsPerSec?: Summary;
}

/**
 * A Kysely instance that counts the statements shaped like the dialect's lease extension
 * (`UPDATE … SET locked_until` without touching `attempt`): the broker runs on it through `SqlBroker.fromKysely`.
 */
function countingKysely(engine: EngineName, max: number): { db: AnyDb; extensions: () => number } {
  let extensions = 0;
  const db = connect(engine, max, (event) => {
    const text = event.query.sql.trimStart().toLowerCase();
    if (text.startsWith("update") && text.includes("locked_until") && !text.includes("attempt")) extensions++;
  });
  return { db, extensions: () => extensions };
}

/** W4: 20 ms handlers at workers(64) under a short lease, on the lease form of each engine. */
export async function runLongJobs(s: BenchSettings, select: <T extends { id: string }>(c: T[]) => T[]): Promise<LongJobsResult[]> {
  const L = s.longJobs;
  const cases = select(ENGINES.map((engine) => ({ id: `sqlinbox/${engine}/lease/w${L.workers}-sleep${L.sleepMs}ms-lease${L.leaseMs}ms`, engine })));
  const rt = await loadRuntime();
  const ideal = (L.workers * 1000) / L.sleepMs;
  const results: LongJobsResult[] = [];
  const acc = new Map<string, { share: number[]; rate: number[]; ext: number[] } | LongJobsResult>();
  for (const c of cases) {
    if (typeof rt === "string") acc.set(c.id, { id: c.id, engine: c.engine, notAvailable: rt });
    else if (typeof rt.SqlBroker.fromKysely !== "function")
      acc.set(c.id, { id: c.id, engine: c.engine, notAvailable: "SqlBroker.fromKysely is missing: extension statements cannot be counted" });
    else acc.set(c.id, { share: [], rate: [], ext: [] });
  }
  for (let round = 1; round <= s.rounds; round++) {
    for (const c of cases) {
      const a = acc.get(c.id)!;
      if (!("share" in a)) continue;
      const admin = connect(c.engine, 2);
      const counting = countingKysely(c.engine, L.workers + 8);
      try {
        await recreateTable(admin, c.engine, "lease");
        await insertJobs(admin, "lease", L.n);
        const tracker = new JobTracker(L.n);
        const { app } = buildApp(rt as Runtime, {
          engine: c.engine,
          form: "lease",
          batch: L.workers,
          workers: L.workers,
          leaseMs: L.leaseMs,
          kysely: counting.db,
          handler: async (p) => {
            tracker.handle(p);
            await sleep(L.sleepMs);
          },
        });
        const t0 = performance.now();
        const e0 = counting.extensions();
        const running = await startApp(app);
        try {
          await withTimeout(tracker.done, 120_000, `${c.id} long jobs`);
          await waitUntilEmpty(() => countRows(admin, "lease"));
        } finally {
          await running.stop();
        }
        const sec = (performance.now() - t0) / 1000;
        const rate = L.n / sec;
        a.rate.push(rate);
        a.share.push(rate / ideal);
        a.ext.push((counting.extensions() - e0) / sec);
        report(
          `W4 round ${round} ${c.id}: ${rate.toFixed(0)} jobs/s = ${((rate / ideal) * 100).toFixed(1)}% of ideal, ${((counting.extensions() - e0) / sec).toFixed(1)} extensions/s`,
        );
      } catch (e) {
        report(`W4 ${c.id}: FAILED: ${(e as Error).message}`);
        acc.set(c.id, { id: c.id, engine: c.engine, error: (e as Error).message });
      } finally {
        await counting.db.destroy().catch(() => {});
        await admin.destroy();
      }
    }
  }
  for (const c of cases) {
    const a = acc.get(c.id)!;
    results.push(
      "share" in a ? { id: c.id, engine: c.engine, settings: L, shareOfIdeal: summarize(a.share), jobsPerSec: summarize(a.rate), extensionsPerSec: summarize(a.ext) } : a,
    );
  }
  return results;
}

export function longJobsTable(rs: readonly LongJobsResult[]): string {
  return table(
    ["W4 long jobs", "share of ideal", "jobs/s", "extensions/s"],
    rs.map((r) =>
      r.shareOfIdeal
        ? [
            r.id,
            `${fmt(r.shareOfIdeal.median * 100, 1)}% (${fmt(r.shareOfIdeal.min * 100, 1)}–${fmt(r.shareOfIdeal.max * 100, 1)})`,
            fmt(r.jobsPerSec!.median),
            fmt(r.extensionsPerSec!.median, 1),
          ]
        : [r.id, r.notAvailable ? `not available: ${short(r.notAvailable)}` : `FAILED: ${short(r.error)}`, "", ""],
    ),
  );
}
