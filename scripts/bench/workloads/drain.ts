import { REDIS_URL, type BenchSettings } from "../config.js";
import { JobTracker, withTimeout } from "../jobs.js";
import { summarize, type Summary } from "../stats.js";
import type { DrainCase, StoreName, SystemName } from "../types.js";
import { isLocalUrl, serverCpuMicros } from "../db-sampler.js";
import { urlOf } from "../db.js";

export interface DrainResult {
  readonly id: string;
  readonly system: SystemName;
  readonly engine: StoreName;
  readonly variant: string;
  readonly settings: Readonly<Record<string, unknown>>;
  /** Set when the case could not run: nothing was measured. */
  readonly notAvailable?: string;
  /** Set when a round failed: the jobs were not all processed. */
  readonly error?: string;
  readonly n?: number;
  /** Jobs per second, one value per round. */
  readonly rounds?: readonly number[];
  readonly jobsPerSec?: Summary;
  readonly statementsPerJob?: number;
  /** CPU time of this process (user + system) per job, median of rounds: what the client side costs, whatever the machine's load. */
  readonly cpuMicrosPerJob?: number;
  /**
   * CPU time of the database server per job, median of rounds (Postgres and MariaDB; `serverCpuMicros`): what the
   * statements cost the server. It counts whatever else the server ran meanwhile, so it is read on a quiet server.
   */
  readonly serverCpuMicrosPerJob?: number;
  readonly duplicates?: number;
}

const log = (msg: string) => process.stderr.write(`${msg}\n`);

async function runRound(c: DrainCase, n: number): Promise<{ jobsPerSec: number; statements?: number; cpuMicros: number; serverCpuMicros: number | undefined; duplicates: number }> {
  await c.reset();
  await c.insert(n);
  await c.analyze();
  const tracker = new JobTracker(n);
  // A server on another host: its processes are not this machine's.
  const serverCpu = () => (c.engine !== "sqlite" && isLocalUrl(c.engine === "redis" ? REDIS_URL : urlOf(c.engine)) ? serverCpuMicros(c.engine) : undefined);
  const server = serverCpu();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const out = await withTimeout(c.drain(tracker), 120_000 + n * 20, `${c.id} drain of ${n}`);
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const serverAfter = serverCpu();
  if (out.processed !== n) throw new Error(`${c.id}: processed ${out.processed} of ${n}`);
  return {
    jobsPerSec: (n * 1000) / ms,
    statements: out.statements,
    cpuMicros: (used.user + used.system) / n,
    serverCpuMicros: server === undefined || serverAfter === undefined ? undefined : (serverAfter - server) / n,
    duplicates: tracker.duplicates,
  };
}

/**
 * W1: every case drains a backlog, rounds interleaved (round 1 of every case, then round 2 …).
 * A warm-up round of `warmupN` per case sizes that case's N so one drain takes about `drainTargetMs`.
 */
export async function runDrain(cases: readonly DrainCase[], s: BenchSettings): Promise<DrainResult[]> {
  const live: DrainCase[] = [];
  const results = new Map<string, DrainResult & { rounds: number[]; statements: number[]; cpu: number[]; serverCpu: number[]; dup: number }>();
  const failed = new Map<string, DrainResult>();
  for (const c of cases) {
    const base = { id: c.id, system: c.system, engine: c.engine, variant: c.variant, settings: c.settings };
    const reason = await c.check().catch((e: unknown) => `check failed: ${(e as Error).message}`);
    if (reason !== null) {
      log(`W1 ${c.id}: not available: ${reason}`);
      failed.set(c.id, { ...base, notAvailable: reason });
      continue;
    }
    try {
      await c.setup();
      live.push(c);
      results.set(c.id, { ...base, rounds: [], statements: [], cpu: [], serverCpu: [], dup: 0 });
    } catch (e) {
      log(`W1 ${c.id}: setup failed: ${(e as Error).stack}`);
      failed.set(c.id, { ...base, error: `setup failed: ${(e as Error).message}` });
    }
  }

  const nOf = new Map<string, number>();
  for (const c of live) {
    if (s.warmupN <= 0) {
      nOf.set(c.id, s.minN);
      continue;
    }
    try {
      // A small warm-up is mostly start-up for a fast system and sizes its N far too small (start-up then
      // weighs on its result): when it points past 10× its own size, a second warm-up at a quarter of
      // that N sizes it again.
      const sizeFrom = (jobsPerSec: number) => Math.min(s.maxN, Math.max(s.minN, Math.round((jobsPerSec * s.drainTargetMs) / 1000 / 100) * 100));
      let warm = await runRound(c, s.warmupN);
      let n = sizeFrom(warm.jobsPerSec);
      if (n > 10 * s.warmupN) {
        warm = await runRound(c, Math.max(s.warmupN, Math.round(n / 4)));
        n = Math.max(n, sizeFrom(warm.jobsPerSec));
      }
      nOf.set(c.id, n);
      log(`W1 ${c.id}: warm-up ${warm.jobsPerSec.toFixed(0)} jobs/s → N = ${n}`);
    } catch (e) {
      fail(c, e);
    }
  }

  function fail(c: DrainCase, e: unknown) {
    const r = results.get(c.id)!;
    const base = { id: r.id, system: r.system, engine: r.engine, variant: r.variant, settings: r.settings };
    // the runtime refusing a form it does not implement yet is "not available", not a lost job
    if ((e as { code?: unknown }).code === "UnsupportedForm") {
      log(`W1 ${c.id}: not available: ${(e as Error).message}`);
      failed.set(c.id, { ...base, notAvailable: (e as Error).message });
    } else {
      log(`W1 ${c.id}: FAILED: ${(e as Error).stack}`);
      failed.set(c.id, { ...base, error: (e as Error).message });
    }
    results.delete(c.id);
  }

  for (let round = 1; round <= s.rounds; round++) {
    for (const c of live) {
      const r = results.get(c.id);
      if (r === undefined) continue;
      const n = nOf.get(c.id)!;
      try {
        const out = await runRound(c, n);
        r.rounds.push(out.jobsPerSec);
        if (out.statements !== undefined) r.statements.push(out.statements / n);
        r.cpu.push(out.cpuMicros);
        if (out.serverCpuMicros !== undefined) r.serverCpu.push(out.serverCpuMicros);
        r.dup += out.duplicates;
        log(`W1 round ${round}/${s.rounds} ${c.id}: ${out.jobsPerSec.toFixed(0)} jobs/s (N ${n})`);
      } catch (e) {
        fail(c, e);
      }
    }
  }
  for (const c of live) await c.teardown().catch((e: unknown) => log(`W1 ${c.id}: teardown: ${(e as Error).message}`));

  return cases.map((c) => {
    const f = failed.get(c.id);
    if (f) return f;
    const r = results.get(c.id)!;
    const { statements, cpu, serverCpu, dup, ...rest } = r;
    return {
      ...rest,
      n: nOf.get(c.id),
      jobsPerSec: summarize(r.rounds),
      cpuMicrosPerJob: summarize(cpu).median,
      ...(serverCpu.length ? { serverCpuMicrosPerJob: summarize(serverCpu).median } : {}),
      duplicates: dup,
      ...(statements.length ? { statementsPerJob: summarize(statements).median } : {}),
    };
  });
}
