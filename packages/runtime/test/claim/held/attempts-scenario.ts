import { expect } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, defaultOnError, keys, silentLogger, subscriber } from "../../../src/index.js";
import { until } from "../../support/claim-forms.js";
import { createTables, deadJobsOf, dropTables, insertGrouped, readDead, readSource, retryJobsOf } from "../../support/dead-letter-tables.js";
import { type TestEngine, unique } from "../../support/engines.js";

export const ATTEMPTS_ROWS = 200;
const MAX_ATTEMPTS = 3;

/**
 * Two apps on one advisory table (as two processes would be), 200 rows that always throw,
 * `maxAttempts: 3` and backoffs of a few ms, so rows come back while the other app's window still
 * holds an older reading of them: every row must be delivered exactly three times, reading
 * attempts 1, 2, 3, and end in the dead letter. `batch` claims that many rows at a time.
 */
export async function exactAttempts(engine: TestEngine, db: AnyKysely, url: string, { prefix, batch }: { readonly prefix: string; readonly batch?: number }): Promise<void> {
  const jobs = unique(prefix);
  const dead = unique(`${prefix}_dead`);
  await createTables(engine, db, jobs, dead, { retryAfter: true });
  const spec = retryJobsOf(jobs, "advisory");
  const seen = new Map<number, Array<number | undefined>>();
  let queue = InboxQueue.of(spec, "jobs").pollInterval(20).workers(4);
  if (batch !== undefined) queue = queue.batch(batch);
  queue = queue.deadLetter(deadJobsOf(dead), { maxAttempts: MAX_ATTEMPTS }).onError(defaultOnError({ baseMs: 10, factor: 2, capMs: 40 }));
  const appOf = (name: string) =>
    new App({ name, version: "0", logger: silentLogger }).withBroker(SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs"), (b) =>
      b.include(
        subscriber(queue, async (_job, ctx) => {
          const id = Number(ctx.id);
          seen.set(id, [...(seen.get(id) ?? []), ctx.get(keys.attempt)]);
          throw new Error("always fails");
        }),
      ),
    );
  const apps = [await appOf("a").start(), await appOf("b").start()];
  try {
    await insertGrouped(db, jobs, ATTEMPTS_ROWS);
    await until(async () => (await readDead(db, dead)).length === ATTEMPTS_ROWS, 90_000, `${ATTEMPTS_ROWS} rows in the dead letter`);
    expect(await readSource(db, jobs)).toEqual([]);
  } finally {
    for (const app of apps) await app.stop();
  }
  const moved = await readDead(db, dead);
  await dropTables(db, jobs, dead);
  const wrong = [...seen].filter(([, attempts]) => attempts.join() !== "1,2,3").map(([id, attempts]) => `row ${id}: ${attempts.join(", ")}`);
  expect(wrong).toEqual([]);
  expect(seen.size).toBe(ATTEMPTS_ROWS);
  expect(moved.every((m) => m.failedAttempts === MAX_ATTEMPTS)).toBe(true);
}
