import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FormName } from "./db.js";

/** Where the peers run: the same local servers the tests use. */
export const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const MYSQL_URL = process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";
/** BullMQ's Redis: the local server; the bench uses its own key prefix and removes its queues after a case. */
export const REDIS_URL = process.env.SQLINBOX_REDIS_URL ?? "redis://127.0.0.1:6379";

let sqliteDir: string | undefined;
/** One SQLite file per run, in a fresh temp directory. */
export function sqlitePath(name = "bench.sqlite"): string {
  // a child process (W3's second process) inherits the directory through the environment
  sqliteDir ??= process.env.SQLINBOX_BENCH_SQLITE_DIR ?? mkdtempSync(join(tmpdir(), "sqlinbox-bench-"));
  process.env.SQLINBOX_BENCH_SQLITE_DIR = sqliteDir;
  return join(sqliteDir, name);
}

export interface BenchSettings {
  /** `smoke`: correctness only, tiny N, one round. */
  readonly mode: "full" | "smoke";
  readonly rounds: number;
  /** Jobs per W1 warm-up/calibration round. */
  readonly warmupN: number;
  /** W1: each case's N is sized from its warm-up rate so one drain takes about this long. */
  readonly drainTargetMs: number;
  readonly minN: number;
  readonly maxN: number;
  /** W2: publishes per measurement. */
  readonly enqueueN: number;
  /** W2's bulk phase: rows published in calls of 100 (ten times the one-by-one phases: at 100,000 rows/s, 10,000 took a tenth of a second, too short to time). */
  readonly bulkN: number;
  /** W3: samples per latency measurement, and the fixed rate of the loaded variant. */
  readonly latencySamples: number;
  readonly latencyRatePerSec: number;
  /** Delays (`--workloads=due`): samples per case, each one a 500 ms delay waited out. */
  readonly dueSamples: number;
  /** W4: jobs, sleep per job, workers, lease. */
  readonly longJobs: { readonly n: number; readonly sleepMs: number; readonly workers: number; readonly leaseMs: number };
  /**
   * Scale-out: P worker processes (each one App, `batch(b).workers(w)`) drain one table of `n` rows (`nHeld` for
   * the row-lock and advisory forms, which hold a connection per job and run far slower), on Postgres and MariaDB.
   */
  readonly scale: {
    readonly n: number;
    readonly nHeld: number;
    readonly processes: readonly number[];
    readonly forms: readonly FormName[];
    readonly batch: number;
    readonly workers: number;
  };
  /** Only cases whose id contains one of these substrings (empty: all). */
  readonly only: readonly string[];
  readonly workloads: readonly string[];
}

export function settingsFromArgs(argv: readonly string[]): BenchSettings {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const smoke = argv.includes("--smoke");
  const num = (name: string, dflt: number) => (flag(name) !== undefined ? Number(flag(name)) : dflt);
  const list = (name: string, dflt: readonly string[]) => flag(name)?.split(",").filter(Boolean) ?? dflt;
  return {
    mode: smoke ? "smoke" : "full",
    rounds: num("rounds", smoke ? 1 : 3),
    warmupN: num("warmup-n", smoke ? 0 : 300),
    drainTargetMs: num("drain-ms", 2_000),
    minN: num("min-n", smoke ? 50 : 500),
    maxN: num("max-n", smoke ? 50 : 200_000),
    enqueueN: num("enqueue-n", smoke ? 20 : 10_000),
    bulkN: num("bulk-n", smoke ? 20 : 100_000),
    latencySamples: num("latency-n", smoke ? 5 : 200),
    latencyRatePerSec: num("latency-rate", 100),
    dueSamples: num("due-n", smoke ? 3 : 50),
    longJobs: smoke ? { n: 64, sleepMs: 20, workers: 64, leaseMs: 1_000 } : { n: num("long-n", 3_200), sleepMs: 20, workers: 64, leaseMs: 1_000 },
    scale: {
      n: num("scale-n", smoke ? 200 : 50_000),
      nHeld: num("scale-n-held", smoke ? 100 : 10_000),
      processes: list("scale-processes", smoke ? ["1", "2"] : ["1", "2", "4"]).map(Number),
      forms: list("scale-forms", ["lease", "rowLock"]) as FormName[],
      batch: num("scale-batch", 64),
      workers: num("scale-workers", 8),
    },
    only: list("only", []),
    workloads: list("workloads", ["drain", "enqueue", "latency", "long", "scale"]),
  };
}
