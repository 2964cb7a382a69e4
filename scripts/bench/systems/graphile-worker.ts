import { Logger, makeWorkerUtils, run, runMigrations, type Runner, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import { PG_URL } from "../config.js";
import { payloadOf, waitUntilEmpty, type JobTracker } from "../jobs.js";
import type { DrainCase } from "../types.js";

const SCHEMA = "bench_graphile_worker";
const TASK = "noop";
export const silentLogger = new Logger(() => () => {});

/**
 * A graphile-worker 0.18 configuration: its defaults (`localQueue` off, completions one by one), or its batched mode as its
 * performance page runs it (https://worker.graphile.org/docs/performance: `localQueue: { size: 500 }`,
 * `completeJobBatchDelay: 0`, `failJobBatchDelay: 0`, `concurrentJobs: 24`, `maxPoolSize: 25`) at a given local queue size.
 */
export interface GraphileConfig {
  /** `default`, or `lq<size>` for the batched mode. */
  readonly name: string;
  readonly worker: Readonly<Record<string, unknown>>;
}

export const GRAPHILE_DEFAULT: GraphileConfig = { name: "default", worker: {} };

export function graphileBatched(localQueueSize: number): GraphileConfig {
  return { name: `lq${localQueueSize}`, worker: { localQueue: { size: localQueueSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } };
}

/** `run()` options; the pool is sized as the performance page sizes it (concurrency + 1), never below graphile-worker's default 10. */
export function graphileOptions(config: GraphileConfig, concurrency: number) {
  return {
    connectionString: PG_URL,
    schema: SCHEMA,
    concurrency,
    maxPoolSize: Math.max(10, concurrency + 1),
    noHandleSignals: true,
    logger: silentLogger,
    preset: { worker: { ...config.worker } },
  };
}

export async function graphileSetup(): Promise<void> {
  await runMigrations({ connectionString: PG_URL, schema: SCHEMA, logger: silentLogger });
}

export async function graphileReset(pool: pg.Pool): Promise<void> {
  await pool.query(`TRUNCATE ${SCHEMA}._private_jobs, ${SCHEMA}._private_job_queues CASCADE`);
}

async function graphilePending(pool: pg.Pool): Promise<number> {
  const r = await pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`);
  return r.rows[0].n as number;
}

/** The tables graphile-worker's claim (`get_job`) reads, with fresh statistics, as autovacuum would leave them. */
async function graphileAnalyze(pool: pg.Pool): Promise<void> {
  await pool.query(`VACUUM ANALYZE ${SCHEMA}._private_jobs, ${SCHEMA}._private_job_queues, ${SCHEMA}._private_tasks`);
}

export { SCHEMA as GRAPHILE_SCHEMA, TASK as GRAPHILE_TASK };

/** W1 drain with graphile-worker: jobs added in bulk through `addJobs`, a `noop` task that decodes its payload. */
export function graphileDrainCase(config: GraphileConfig, concurrency: number): DrainCase {
  let pool: pg.Pool | undefined;
  let utils: WorkerUtils | undefined;
  return {
    id: `graphile-worker/postgres/${config.name}/c${concurrency}`,
    system: "graphile-worker",
    engine: "postgres",
    variant: `${config.name} c${concurrency}`,
    settings: { version: "0.18", concurrency, maxPoolSize: Math.max(10, concurrency + 1), ...config.worker },
    async check() {
      return null;
    },
    async setup() {
      pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
      await graphileSetup();
      utils = await makeWorkerUtils({ connectionString: PG_URL, schema: SCHEMA, logger: silentLogger });
    },
    async reset() {
      await graphileReset(pool!);
    },
    async insert(n) {
      for (let start = 0; start < n; start += 5_000) {
        const specs = [];
        for (let i = start; i < Math.min(n, start + 5_000); i++) specs.push({ identifier: TASK, payload: payloadOf(i) });
        await utils!.addJobs(specs);
      }
    },
    async analyze() {
      await graphileAnalyze(pool!);
    },
    async drain(tracker: JobTracker) {
      const runner: Runner = await run({
        ...graphileOptions(config, concurrency),
        taskList: { [TASK]: async (payload) => void tracker.handle(payload) },
      });
      try {
        await tracker.done;
        await waitUntilEmpty(() => graphilePending(pool!));
      } finally {
        await runner.stop();
      }
      return { processed: tracker.count };
    },
    async teardown() {
      await utils?.release();
      await pool?.end();
    },
  };
}
