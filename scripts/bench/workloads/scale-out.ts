import { fork, type ChildProcess } from "node:child_process";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import type { BenchSettings } from "../config.js";
import { connect, countRows, insertJobs, recreateTable, urlOf, type AnyDb, type FormName } from "../db.js";
import { DbSampler, isLocalUrl, type DbSample } from "../db-sampler.js";
import { IdLedger, sleep, withTimeout } from "../jobs.js";
import { report } from "../report-helpers.js";
import { short, table } from "../report.js";
import { fmt, summarize, type Summary } from "../stats.js";
import { loadRuntime } from "../systems/sqlinbox.js";
import type { EngineName } from "../types.js";
import type { ScaleChildMessage, ScaleParentMessage } from "./scale-child.js";

const CHILD = fileURLToPath(new URL("./scale-child.ts", import.meta.url));
/**
 * The wall clock, the same in every process at the moment it is read. Not `performance.timeOrigin + now()`:
 * each process fixes its origin when it starts, so a step of the system clock between the parent's start and a
 * child's puts their times apart by the step. A CI smoke run (N 100 or 200) once had a child's first handler
 * call 13 or 26 ms after the parent saw the table empty (-7,611 jobs/s); a clock step is the likely cause.
 */
const wallNow = () => Date.now();

/** The engines scale-out runs on: one server shared by every worker process (SQLite is one file per process). */
const SCALE_ENGINES: readonly EngineName[] = ["postgres", "mariadb"];

/** One process count's drain: throughput, exactly-once, and what the database did meanwhile. */
interface ScaleRun {
  readonly processes: number;
  readonly n: number;
  /** Jobs per second from the first handler call (any process) to the table observed empty, one per round. */
  readonly rounds: readonly number[];
  readonly jobsPerSec: Summary;
  /** Indexes handled more than once (every round added up): a double delivery. */
  readonly duplicates: number;
  /** Worker processes' CPU (user + system, from each one's first handler call to the stop request), per job and as a share of all cores over the drain. */
  readonly clientCpuMicrosPerJob: number;
  readonly clientCpuShare: number;
  /** Last round: ms between the first process's first handler call and the last process's (startup skew, inside the timed span). */
  readonly startSkewMs: number;
  /** How many jobs each process handled (last round): how evenly the claims spread. */
  readonly perProcess: readonly number[];
  /** The last round's database-side sample. */
  readonly db: DbSample;
}

export interface ScaleResult {
  readonly id: string;
  readonly engine: EngineName;
  readonly form: FormName;
  readonly settings: { readonly batch: number; readonly workers: number; readonly cores: number };
  readonly notAvailable?: string;
  readonly error?: string;
  readonly runs?: readonly ScaleRun[];
}

interface Worker {
  readonly child: ChildProcess;
  handled: number;
  done?: { firstAt: number; lastAt: number; cpuMicros: number };
}

/**
 * Forks `p` workers and resolves once every one is built and waiting for `go`. `failed` rejects when a worker
 * reports an error or exits before it was done, so a drain never waits out its timeout for a dead worker.
 */
async function forkWorkers(
  p: number,
  engine: EngineName,
  form: FormName,
  s: BenchSettings,
  onIds: (ids: readonly number[], w: Worker) => void,
): Promise<{ workers: Worker[]; failed: Promise<never> }> {
  const workers: Worker[] = [];
  const ready: Promise<void>[] = [];
  let fail: (e: Error) => void = () => {};
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => {}); // observed by the drain; a failure after it ended is reported by the missing `done`
  for (let k = 0; k < p; k++) {
    // The child runs what this process runs (fork passes on its flags): the built packages, or the sources under `--conditions`.
    const child = fork(CHILD, [engine, form, String(s.scale.batch), String(s.scale.workers)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const w: Worker = { child, handled: 0 };
    workers.push(w);
    ready.push(
      new Promise<void>((resolve, reject) => {
        child.on("message", (m: ScaleChildMessage) => {
          if ("ready" in m) resolve();
          else if ("ids" in m) onIds(m.ids, w);
          else if ("done" in m) w.done = m;
          else {
            const e = new Error(`worker ${k + 1}: ${m.error}`);
            reject(e);
            fail(e);
          }
        });
        child.on("exit", (code) => {
          if (w.done) return;
          const e = new Error(`worker ${k + 1} exited with ${code} before it was done`);
          reject(e);
          fail(e);
        });
      }),
    );
  }
  // a failed worker leaves the others running: the caller stops them all
  await withTimeout(Promise.all(ready), 60_000, `${p} scale workers starting`).catch(async (e: unknown) => {
    await stopWorkers(workers);
    throw e;
  });
  return { workers, failed };
}

async function stopWorkers(workers: readonly Worker[]): Promise<void> {
  await Promise.all(
    workers.map(async (w) => {
      if (w.child.exitCode !== null || w.child.signalCode !== null) return;
      const exited = new Promise((resolve) => w.child.once("exit", resolve));
      w.child.send({ stop: true } satisfies ScaleParentMessage);
      // a worker that does not stop in time is ended by the pid this run forked, never by name
      await withTimeout(exited, 30_000, "scale worker stop").catch(() => w.child.kill("SIGKILL"));
    }),
  );
}

/** One drain of `n` rows by `p` processes. Throws when a job is missing or the table is not emptied. */
async function drainOnce(admin: AnyDb, sampler: DbSampler, engine: EngineName, form: FormName, p: number, n: number, s: BenchSettings) {
  await recreateTable(admin, engine, form);
  await insertJobs(admin, form, n);
  const ledger = new IdLedger(n);
  const { workers, failed } = await forkWorkers(p, engine, form, s, (ids, w) => {
    w.handled += ids.length;
    for (const i of ids) ledger.record(i);
  });
  let emptyAt: number;
  let sampling = false;
  try {
    await sampler.start();
    sampling = true;
    for (const w of workers) w.child.send({ go: true } satisfies ScaleParentMessage);
    await withTimeout(Promise.race([ledger.complete, failed]), 120_000 + n * 10, `scale ${engine}/${form} p${p}: ${n} jobs`);
    const deadline = Date.now() + 60_000;
    while ((await countRows(admin, form)) > 0) {
      if (Date.now() > deadline) throw new Error(`scale ${engine}/${form} p${p}: rows left in the table 60 s after every job was handled`);
      await sleep(5);
    }
    emptyAt = wallNow();
    sampling = false;
    await sampler.end();
  } finally {
    if (sampling) await sampler.end().catch(() => {}); // a failed drain: stop the sampler's timer too
    await stopWorkers(workers);
  }
  const sample = await sampler.result();
  const missing = workers.filter((w) => !w.done).length;
  if (missing) throw new Error(`scale ${engine}/${form} p${p}: ${missing} worker(s) did not report`);
  if (ledger.foreign) throw new Error(`scale ${engine}/${form} p${p}: ${ledger.foreign} handled index(es) outside 0…${n - 1}`);
  const starts = workers.map((w) => w.done!.firstAt).filter((t) => t > 0);
  const firstAt = Math.min(...starts);
  const seconds = (emptyAt - firstAt) / 1000;
  const cpuMicros = workers.reduce((sum, w) => sum + w.done!.cpuMicros, 0);
  return {
    jobsPerSec: n / seconds,
    duplicates: ledger.duplicates,
    cpuMicrosPerJob: cpuMicros / n,
    clientCpuShare: cpuMicros / 1e6 / (sample.seconds * cpus().length),
    perProcess: workers.map((w) => w.handled),
    startSkewMs: Math.max(...starts) - firstAt,
    sample,
  };
}

/**
 * Scale-out (issue 12): 1, 2, 4 … worker processes, each one sqlinbox App with the same subscription, drain one
 * table; every handled index comes back to this process, which fails the case on a missing job and on any double
 * delivery (none is allowed without a crash), while a sampler reads the server's CPU, fsyncs and lock waits.
 */
export async function runScaleOut(s: BenchSettings, select: <T extends { id: string }>(c: T[]) => T[]): Promise<ScaleResult[]> {
  const cases = select(SCALE_ENGINES.flatMap((engine) => s.scale.forms.map((form) => ({ id: `scale/${engine}/${form}/b${s.scale.batch}-w${s.scale.workers}`, engine, form }))));
  const rt = await loadRuntime();
  const settings = { batch: s.scale.batch, workers: s.scale.workers, cores: cpus().length };
  const results: ScaleResult[] = [];
  for (const c of cases) {
    if (typeof rt === "string") {
      results.push({ ...c, settings, notAvailable: rt });
      continue;
    }
    const n = c.form === "lease" ? s.scale.n : s.scale.nHeld;
    const admin = connect(c.engine, 1);
    const sampler = new DbSampler(connect(c.engine, 1), c.engine, isLocalUrl(urlOf(c.engine)));
    const runs: ScaleRun[] = [];
    try {
      for (const p of s.scale.processes) {
        const rounds: number[] = [];
        let duplicates = 0;
        let last: Awaited<ReturnType<typeof drainOnce>> | undefined;
        for (let round = 1; round <= s.rounds; round++) {
          last = await drainOnce(admin, sampler, c.engine, c.form, p, n, s);
          rounds.push(last.jobsPerSec);
          duplicates += last.duplicates;
          report(
            `scale ${c.id} p${p} round ${round}/${s.rounds}: ${last.jobsPerSec.toFixed(0)} jobs/s, ${last.duplicates} duplicate(s), per process ${last.perProcess.join("/")}, start skew ${last.startSkewMs.toFixed(0)} ms`,
          );
        }
        runs.push({
          processes: p,
          n,
          rounds,
          jobsPerSec: summarize(rounds),
          duplicates,
          clientCpuMicrosPerJob: last!.cpuMicrosPerJob,
          clientCpuShare: last!.clientCpuShare,
          perProcess: last!.perProcess,
          startSkewMs: last!.startSkewMs,
          db: last!.sample,
        });
        if (duplicates > 0) throw new Error(`DOUBLE DELIVERY: ${duplicates} job(s) handled twice by ${p} processes on the ${c.form} form, with no crash`);
      }
      results.push({ ...c, settings, runs });
    } catch (e) {
      report(`scale ${c.id}: FAILED: ${(e as Error).stack}`);
      results.push({ ...c, settings, runs, error: (e as Error).message });
    } finally {
      await admin.destroy();
      await sampler.db.destroy();
    }
  }
  return results;
}

/** The database's waits as one cell: the largest shares of active-session samples, then the lock counters. */
function waitsCell(engine: EngineName, db: DbSample): string {
  const total = Math.max(1, db.activeSessionSamples);
  const top = Object.entries(db.waits)
    .filter(([k]) => k.includes(":") && !k.startsWith("state:"))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([k, v]) => `${k} ${fmt((v / total) * 100)}%`);
  if (engine === "postgres") {
    const cpu = db.waits["CPU (no wait event)"] ?? 0;
    return [`on CPU ${fmt((cpu / total) * 100)}%`, ...top, `not granted ${db.waits["pg_locks not granted"] ?? 0}`].join(", ");
  }
  const c = db.counters;
  return `row lock waits ${fmt(c.Innodb_row_lock_waits ?? 0)} (${fmt(c.Innodb_row_lock_time ?? 0)} ms), LOCK WAIT samples ${db.waits["INNODB_TRX LOCK WAIT"] ?? 0}, deadlocks ${fmt(c.Innodb_deadlocks ?? 0)}`;
}

/**
 * fsyncs per second over the drain: Postgres `pg_stat_wal.wal_sync`; MySQL/MariaDB `Innodb_os_log_fsyncs` where
 * the server has it, else `Innodb_data_fsyncs` (MariaDB 10.11 has no log counter; there this one follows its redo log writes).
 */
const fsyncsPerSec = (engine: EngineName, db: DbSample): number =>
  (engine === "postgres" ? (db.counters.wal_sync ?? 0) : (db.counters.Innodb_os_log_fsyncs ?? db.counters.Innodb_data_fsyncs ?? 0)) / Math.max(db.seconds, 1e-3);

/** Commits per second over the drain: Postgres `pg_stat_database.xact_commit` of the bench database; MySQL/MariaDB `Com_commit` (server-wide). */
const commitsPerSec = (engine: EngineName, db: DbSample): number =>
  (engine === "postgres" ? (db.counters.xact_commit ?? 0) : (db.counters.Com_commit ?? 0)) / Math.max(db.seconds, 1e-3);

/** One table per engine × form: a row per process count, with the speed-up over the first (one process). */
export function scaleTable(rs: readonly ScaleResult[]): string {
  return rs.map(scaleCaseTable).join("\n\n");
}

function scaleCaseTable(r: ScaleResult): string {
  const pct = (x: number | undefined) => (x === undefined ? "–" : `${fmt(x * 100)}%`);
  const head = [
    `scale-out ${r.id}`,
    "N",
    "jobs/s",
    "speed-up",
    "client CPU (of all cores)",
    "DB sessions CPU",
    "DB server CPU",
    "machine busy",
    "commits/s",
    "fsyncs/s",
    "waits (share of active-session samples) / lock counters",
    "dups",
  ];
  const failed = r.notAvailable ? `not available: ${short(r.notAvailable)}` : r.error ? `FAILED: ${short(r.error)}` : undefined;
  const runs = r.runs ?? [];
  const base = runs[0]?.jobsPerSec.median ?? Number.NaN;
  const rows = runs.map((run) => {
    const cores = r.settings.cores;
    const db = run.db;
    return [
      `${run.processes} process${run.processes === 1 ? "" : "es"}`,
      fmt(run.n),
      fmt(run.jobsPerSec.median),
      `${fmt(run.jobsPerSec.median / base, 2)}×`,
      `${pct(run.clientCpuShare)} (${fmt(run.clientCpuMicrosPerJob, 1)} µs/job)`,
      pct(db.sessionCpuSec !== undefined ? db.sessionCpuSec / (db.seconds * cores) : undefined),
      pct(db.serverCpuSec !== undefined ? db.serverCpuSec / (db.seconds * cores) : undefined),
      pct(db.machineBusy),
      fmt(commitsPerSec(r.engine, db)),
      fmt(fsyncsPerSec(r.engine, db)),
      waitsCell(r.engine, db),
      String(run.duplicates),
    ];
  });
  return table(head, failed ? [...rows, [failed]] : rows);
}
