/**
 * The attempt an advisory delivery reports is the one its take counted, read back by the take
 * (`RETURNING`) or on the session that holds the key (MySQL/MariaDB), never the candidate the
 * window read, which may predate a retry of the same row. Two apps on one table (as two
 * processes would be), 200 rows that always throw, `maxAttempts: 3` and backoffs of a few ms, so
 * rows come back while the other app's window still holds an older reading of them: every row is
 * delivered exactly three times, reading attempts 1, 2, 3, and ends in the dead letter.
 */
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../../support/fixtures.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, defaultOnError, keys, silentLogger, subscriber } from "../../../src/index.js";
import { until } from "../../support/claim-forms.js";
import { engines, unique } from "../../support/engines.js";
import { createTables, deadJobsOf, dropTables, insertGrouped, readDead, readSource, retryJobsOf } from "../../support/dead-letter-tables.js";

const ROWS = 200;
const MAX_ATTEMPTS = 3;

describe.each(engines)("advisory attempts on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test(`${ROWS} rows that always throw, maxAttempts ${MAX_ATTEMPTS}, short backoffs, two apps: each row delivered ${MAX_ATTEMPTS} times, attempts 1, 2, 3`, async () => {
    const jobs = unique("adv_attempts");
    const dead = unique("adv_attempts_dead");
    await createTables(engine, db, jobs, dead, { retryAfter: true });
    const spec = retryJobsOf(jobs, "advisory");
    const seen = new Map<number, Array<number | undefined>>();
    const queue = InboxQueue.of(spec, "jobs")
      .pollInterval(20)
      .workers(4)
      .deadLetter(deadJobsOf(dead), { maxAttempts: MAX_ATTEMPTS })
      .onError(defaultOnError({ baseMs: 10, factor: 2, capMs: 40 }));
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
      await insertGrouped(db, jobs, ROWS);
      await until(async () => (await readDead(db, dead)).length === ROWS, 90_000, `${ROWS} rows in the dead letter`);
      expect(await readSource(db, jobs)).toEqual([]);
    } finally {
      for (const app of apps) await app.stop();
    }
    const moved = await readDead(db, dead);
    await dropTables(db, jobs, dead);
    const wrong = [...seen].filter(([, attempts]) => attempts.join() !== "1,2,3").map(([id, attempts]) => `row ${id}: ${attempts.join(", ")}`);
    expect(wrong).toEqual([]);
    expect(seen.size).toBe(ROWS);
    expect(moved.every((m) => m.failedAttempts === MAX_ATTEMPTS)).toBe(true);
  }, 120_000);
});
