import type { FormName } from "./db.js";
import { bullmqDrainCase } from "./systems/bullmq.js";
import { GRAPHILE_DEFAULT, graphileBatched, graphileDrainCase } from "./systems/graphile-worker.js";
import { pgBossDrainCase } from "./systems/pg-boss.js";
import { rawDrainCase } from "./systems/raw-sql.js";
import { sqlinboxDrainCase } from "./systems/sqlinbox.js";
import type { DrainCase, EngineName } from "./types.js";

export const ENGINES: readonly EngineName[] = ["postgres", "mariadb", "sqlite"];
export const FORMS: readonly FormName[] = ["lease", "rowLock", "advisory"];
const SHAPES = [
  { batch: 1, workers: 1 },
  { batch: 1, workers: 8 },
  { batch: 64, workers: 1 },
  { batch: 64, workers: 8 },
] as const;
/** Row-lock transactions that hold a whole claim (issue 10): a batch handler and `.sharedTransaction()`, beside the raw loop of 64 rows per transaction. */
const SHARED_ROW_LOCK = { batch: 64, workers: 8 } as const;
/** The extra Postgres lease shape sized like graphile-worker's batched configuration. */
const GRAPHILE_SIZED = { batch: 500, workers: 8 } as const;

/**
 * The peers' configurations, swept so that each is reported at its best in the same run: graphile-worker's defaults, and
 * its batched mode (`localQueue` on, completions batched with no delay) at three local queue sizes × three concurrencies;
 * pg-boss at three batch sizes × 1 and 4 workers (`work()` calls); BullMQ at three concurrencies per backend.
 */
export const GRAPHILE_SWEEP = { localQueueSizes: [100, 500, 1000], concurrencies: [10, 32, 64] } as const;
export const PGBOSS_SWEEP = { batchSizes: [100, 1000, 5000], workers: [1, 4] } as const;
/** BullMQ: one worker's `concurrency` (its only throughput knob besides the backend), on Redis and on PostgreSQL. */
export const BULLMQ_SWEEP = { redis: [16, 64, 256], postgres: [8, 32, 64] } as const;

export function peerCases(sweep = true): DrainCase[] {
  // The smoke checks each adapter's code paths (defaults, batched, one and several pg-boss workers), not the sweep.
  if (!sweep)
    return [
      graphileDrainCase(GRAPHILE_DEFAULT, 1),
      graphileDrainCase(graphileBatched(500), 10),
      pgBossDrainCase(100, 1),
      pgBossDrainCase(1000, 4),
      bullmqDrainCase("redis", 16),
      bullmqDrainCase("postgres", 8),
    ];
  const cases: DrainCase[] = [graphileDrainCase(GRAPHILE_DEFAULT, 1)];
  for (const size of GRAPHILE_SWEEP.localQueueSizes) for (const c of GRAPHILE_SWEEP.concurrencies) cases.push(graphileDrainCase(graphileBatched(size), c));
  for (const b of PGBOSS_SWEEP.batchSizes) for (const w of PGBOSS_SWEEP.workers) cases.push(pgBossDrainCase(b, w));
  for (const backend of ["redis", "postgres"] as const) for (const c of BULLMQ_SWEEP[backend]) cases.push(bullmqDrainCase(backend, c));
  return cases;
}

/** Every W1 case, in the order rounds run them: peers first, then per engine and form sqlinbox beside its raw loop. `sweep: false` (the smoke): one peer case per code path. */
export function drainCases(sweep = true): DrainCase[] {
  const cases: DrainCase[] = peerCases(sweep);
  for (const engine of ENGINES) {
    for (const form of FORMS) {
      if (engine === "sqlite" && form === "rowLock") continue; // no row locks on SQLite: UnsupportedForm
      for (const { batch, workers } of SHAPES) {
        cases.push(sqlinboxDrainCase(engine, form, batch, workers), rawDrainCase(engine, form, batch, workers));
      }
      if (form === "rowLock") {
        const { batch, workers } = SHARED_ROW_LOCK;
        cases.push(
          sqlinboxDrainCase(engine, form, batch, workers, "batch"),
          sqlinboxDrainCase(engine, form, batch, workers, "shared"),
          rawDrainCase(engine, form, batch, workers, true),
        );
      }
      if (engine === "postgres" && form === "lease") {
        // graphile-worker's best configuration fetches 500 jobs per query (localQueue 500): the same batch, side by side.
        const { batch, workers } = GRAPHILE_SIZED;
        cases.push(sqlinboxDrainCase(engine, form, batch, workers), rawDrainCase(engine, form, batch, workers));
        // The same two claims with unnamed statements (`preparedStatements: false`): what named ones save.
        for (const b of [64, batch]) cases.push(sqlinboxDrainCase(engine, form, b, workers, "row", { prepared: false }));
      }
      if (engine === "mariadb" && form === "lease") {
        // mysql2's `execute` (server-side prepared statements) against the text protocol a broker uses, at b64 and b500.
        const { batch, workers } = GRAPHILE_SIZED;
        cases.push(sqlinboxDrainCase(engine, form, batch, workers), rawDrainCase(engine, form, batch, workers));
        for (const b of [64, batch]) cases.push(sqlinboxDrainCase(engine, form, b, workers, "row", { prepared: true }));
      }
    }
  }
  return cases;
}
