import { createPostgresBackend, Queue, Worker } from "bullmq";
import pg from "pg";
import { PG_URL, REDIS_URL } from "../config.js";
import { payloadOf, waitUntilEmpty, wallNow, type JobTracker } from "../jobs.js";
import type { DrainCase } from "../types.js";
import type { LatencyCase } from "../workloads/latency.js";

/** BullMQ's two backends: Redis (its default) and PostgreSQL (`createPostgresBackend`, new in 6). */
export type BullBackend = "redis" | "postgres";

const QUEUE = "bench-noop";
// biome-ignore lint/suspicious/noExplicitAny: a queue or worker of either backend (their connection types differ)
type AnyQueue = Queue<any, any, string, any, any, string, any, any>;
// biome-ignore lint/suspicious/noExplicitAny: as above
type AnyWorker = Worker<any, any, string, any, any, any>;
/** The Redis key prefix and the Postgres schema the bench's queues live in, apart from anything else on the servers. */
const PREFIX = "sqlinbox-bench";
const SCHEMA = "bench_bullmq";

/**
 * BullMQ 6 at its documented best for throughput (https://docs.bullmq.io/guide/going-to-production,
 * /guide/workers/concurrency, /guide/postgresql): finished jobs removed (`removeOnComplete`, so no set of completed jobs
 * grows during the drain), backlogs added with `addBulk`, one `Worker` whose `concurrency` is swept. On Postgres the pool
 * holds `concurrency + 4` connections (its tuning tip: size the pool for the concurrency); `synchronous_commit` stays at
 * the server's setting, as it does for every other system here.
 */
const BULLMQ_JOB_OPTIONS = { removeOnComplete: true, removeOnFail: true } as const;

function redisConnection() {
  const url = new URL(REDIS_URL);
  // Workers need `maxRetriesPerRequest: null` (BullMQ refuses a blocking connection without it).
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

/** A queue (and a worker's options) on the backend; the same API either way. */
export function bullQueue(backend: BullBackend, poolMax = 10): AnyQueue {
  return backend === "redis"
    ? new Queue(QUEUE, { connection: redisConnection(), prefix: PREFIX })
    : new Queue(QUEUE, { connection: { connectionString: PG_URL, schema: SCHEMA, migrate: true, max: poolMax } }, createPostgresBackend);
}

function bullWorker(backend: BullBackend, concurrency: number, handle: (data: unknown) => void): AnyWorker {
  const processor = async (job: { data: unknown }) => {
    handle(job.data);
  };
  const common = { concurrency, autorun: true, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } };
  return backend === "redis"
    ? new Worker(QUEUE, processor, { ...common, connection: redisConnection(), prefix: PREFIX })
    : new Worker(QUEUE, processor, { ...common, connection: { connectionString: PG_URL, schema: SCHEMA, migrate: true, max: concurrency + 4 } }, createPostgresBackend);
}

/** Jobs not yet finished: waiting, active, delayed, prioritized (finished ones are removed). */
export async function bullPending(queue: AnyQueue): Promise<number> {
  const counts = await queue.getJobCounts("wait", "active", "delayed", "prioritized", "waiting-children");
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** Adds `n` jobs `{ i }` in `addBulk` chunks of 1,000 (BullMQ's docs add bulks of this order). */
async function bullInsert(queue: AnyQueue, n: number, from = 0): Promise<void> {
  for (let start = 0; start < n; start += 1_000) {
    const jobs = [];
    for (let i = start; i < Math.min(n, start + 1_000); i++) jobs.push({ name: "noop", data: payloadOf(from + i), opts: BULLMQ_JOB_OPTIONS });
    await queue.addBulk(jobs);
  }
}

/** Analyzes every table of BullMQ's schema, as autovacuum would leave them after the bulk insert (Postgres backend). */
async function analyzeSchema(): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const tables = await client.query<{ t: string }>("SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1", [SCHEMA]);
    for (const { t } of tables.rows) await client.query(`VACUUM ANALYZE ${t}`);
  } finally {
    await client.end();
  }
}

export function bullmqDrainCase(backend: BullBackend, concurrency: number): DrainCase {
  let queue: AnyQueue | undefined;
  return {
    id: `bullmq/${backend}/c${concurrency}`,
    system: "bullmq",
    engine: backend,
    variant: `concurrency ${concurrency}`,
    settings: { version: "6.7", concurrency, removeOnComplete: true, addBulk: 1_000, ...(backend === "postgres" ? { poolMax: concurrency + 4 } : {}) },
    async check() {
      return null;
    },
    async setup() {
      queue = bullQueue(backend);
      await queue.waitUntilReady();
    },
    async reset() {
      await queue!.obliterate({ force: true });
    },
    async insert(n) {
      await bullInsert(queue!, n);
    },
    async analyze() {
      if (backend === "postgres") await analyzeSchema();
    },
    async drain(tracker: JobTracker) {
      const worker = bullWorker(backend, concurrency, (data) => tracker.handle(data));
      worker.on("error", (e) => console.error("bullmq worker:", e));
      try {
        await tracker.done;
        await waitUntilEmpty(() => bullPending(queue!));
      } finally {
        await worker.close();
      }
      return { processed: tracker.count };
    },
    async teardown() {
      await queue?.obliterate({ force: true });
      await queue?.close();
    },
  };
}

/** W3: `add()` → the handler's start, one worker (concurrency 8) in this process, at BullMQ's defaults otherwise. */
export function bullmqLatency(backend: BullBackend): LatencyCase {
  let queue: AnyQueue | undefined;
  let worker: AnyWorker | undefined;
  return {
    id: `bullmq/${backend}/in-process`,
    system: "bullmq",
    engine: backend,
    how:
      backend === "redis"
        ? "add() → the worker's blocking wait on Redis (BZPOPMIN), worker in this process, concurrency 8"
        : "add() → LISTEN/NOTIFY wakes the worker's wait, worker in this process, concurrency 8",
    check: async () => null,
    async start(onArrival) {
      queue = bullQueue(backend);
      await queue.waitUntilReady();
      await queue.obliterate({ force: true });
      worker = bullWorker(backend, 8, (data) => {
        const { i, t } = data as { i: number; t: number };
        onArrival(i, wallNow() - t);
      });
      await worker.waitUntilReady();
    },
    publish: async (seq) => void (await queue!.add("noop", { i: seq, t: wallNow() }, BULLMQ_JOB_OPTIONS)),
    async stop() {
      await worker?.close();
      await queue?.obliterate({ force: true });
      await queue?.close();
    },
  };
}
