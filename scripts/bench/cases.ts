import type { FormName } from "./db.js";
import { graphileDrainCase } from "./systems/graphile-worker.js";
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

/** Every W1 case, in the order rounds run them: peers first, then per engine and form sqlinbox beside its raw loop. */
export function drainCases(): DrainCase[] {
  const cases: DrainCase[] = [graphileDrainCase("default", 1), graphileDrainCase("batched", 1), graphileDrainCase("batched", 8), pgBossDrainCase()];
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
      }
    }
  }
  return cases;
}
