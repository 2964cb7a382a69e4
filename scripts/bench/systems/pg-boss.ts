import PgBoss from "pg-boss";
import { PG_URL } from "../config.js";
import { payloadOf, waitUntilEmpty, type JobTracker } from "../jobs.js";
import type { DrainCase } from "../types.js";

const SCHEMA = "bench_pgboss";
const QUEUE = "bench-noop";

/**
 * pg-boss 10 with a `batchSize` and `workers` calls of `work()`. A worker fetches a batch, runs the handler, completes the
 * batch (without awaiting) and, when the loop took less than its polling interval, waits the rest of it: so one worker
 * tops out near batchSize / pollingInterval. The interval is set to pg-boss's floor (0.5 s). pg-boss 10 has no
 * `teamSize` (removed in 10.0): concurrency is one `work()` call per worker, as its docs say ("each call to work() will
 * add a new worker").
 */
const PGBOSS_SETTINGS = { version: "10.4", pollingIntervalSeconds: 0.5 } as const;

export function pgBossDrainCase(batchSize: number, workers: number): DrainCase {
  let boss: PgBoss | undefined;
  let partition = "";
  const pending = async () => {
    const r = await boss!.getDb().executeSql(`SELECT count(*)::int AS n FROM ${SCHEMA}.job WHERE name = $1 AND state < 'completed'`, [QUEUE]);
    return r.rows[0].n as number;
  };
  return {
    id: `pg-boss/postgres/batch${batchSize}/w${workers}`,
    system: "pg-boss",
    engine: "postgres",
    variant: `batchSize ${batchSize} × ${workers} work()`,
    settings: { ...PGBOSS_SETTINGS, batchSize, workers, max: workers + 4 },
    async check() {
      return null;
    },
    async setup() {
      boss = new PgBoss({ connectionString: PG_URL, schema: SCHEMA, supervise: false, schedule: false, migrate: true, max: workers + 4 });
      boss.on("error", (e) => console.error("pg-boss:", e));
      await boss.start();
      if ((await boss.getQueue(QUEUE)) === null) await boss.createQueue(QUEUE);
      const q = await boss.getDb().executeSql(`SELECT partition_name FROM ${SCHEMA}.queue WHERE name = $1`, [QUEUE]);
      partition = `${SCHEMA}.${q.rows[0].partition_name as string}`;
    },
    async reset() {
      // completed jobs stay in the queue's partition: truncate it so every round starts on an empty table
      await boss!.getDb().executeSql(`TRUNCATE ${partition}`, []);
    },
    async analyze() {
      // the queue's partition, which pg-boss's fetch reads, and the partitioned parent's own statistics
      await boss!.getDb().executeSql(`VACUUM ANALYZE ${partition}`, []);
      await boss!.getDb().executeSql(`ANALYZE ${SCHEMA}.job`, []);
    },
    async insert(n) {
      for (let start = 0; start < n; start += 5_000) {
        const jobs = [];
        for (let i = start; i < Math.min(n, start + 5_000); i++) jobs.push({ name: QUEUE, data: payloadOf(i) });
        await boss!.insert(jobs, {});
      }
    },
    async drain(tracker: JobTracker) {
      const ids: string[] = [];
      for (let w = 0; w < workers; w++)
        ids.push(
          await boss!.work<{ i: number }>(QUEUE, { batchSize, pollingIntervalSeconds: PGBOSS_SETTINGS.pollingIntervalSeconds }, async (jobs) => {
            for (const job of jobs) tracker.handle(job.data);
          }),
        );
      try {
        await tracker.done;
        await waitUntilEmpty(pending);
      } finally {
        for (const id of ids) await boss!.offWork({ id });
      }
      return { processed: tracker.count };
    },
    async teardown() {
      await boss?.stop({ graceful: false, wait: true });
    },
  };
}
