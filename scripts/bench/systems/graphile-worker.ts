import { Logger, makeWorkerUtils, run, runMigrations, type Runner, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import { PG_URL } from "../config.js";
import { payloadOf, waitUntilEmpty, type JobTracker } from "../jobs.js";
import type { DrainCase } from "../types.js";

const SCHEMA = "bench_graphile_worker";
const TASK = "noop";
export const silentLogger = new Logger(() => () => {});

/** graphile-worker 0.18 settings the bench compares: its defaults, and its batched configuration. */
export const GRAPHILE_CONFIGS = {
  default: {},
  batched: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 },
} as const;

export type GraphileConfigName = keyof typeof GRAPHILE_CONFIGS;

export function graphileOptions(config: GraphileConfigName, concurrency: number) {
  return {
    connectionString: PG_URL,
    schema: SCHEMA,
    concurrency,
    noHandleSignals: true,
    logger: silentLogger,
    preset: { worker: { ...GRAPHILE_CONFIGS[config] } },
  };
}

export async function graphileSetup(): Promise<void> {
  await runMigrations({ connectionString: PG_URL, schema: SCHEMA, logger: silentLogger });
}

export async function graphileReset(pool: pg.Pool): Promise<void> {
  await pool.query(`TRUNCATE ${SCHEMA}._private_jobs, ${SCHEMA}._private_job_queues CASCADE`);
}

export async function graphilePending(pool: pg.Pool): Promise<number> {
  const r = await pool.query(`SELECT count(*)::int AS n FROM ${SCHEMA}._private_jobs`);
  return r.rows[0].n as number;
}

export { SCHEMA as GRAPHILE_SCHEMA, TASK as GRAPHILE_TASK };

/** W1 drain with graphile-worker: jobs added in bulk through `addJobs`, a `noop` task that decodes its payload. */
export function graphileDrainCase(config: GraphileConfigName, concurrency: number): DrainCase {
  let pool: pg.Pool | undefined;
  let utils: WorkerUtils | undefined;
  return {
    id: `graphile-worker/postgres/${config}/c${concurrency}`,
    system: "graphile-worker",
    engine: "postgres",
    variant: `${config} c${concurrency}`,
    settings: { version: "0.18", concurrency, ...GRAPHILE_CONFIGS[config] },
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
