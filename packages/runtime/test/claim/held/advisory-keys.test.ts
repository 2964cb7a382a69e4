/**
 * Per-key serialization of the advisory form on every engine: with workers(8) and 200 rows
 * over 10 keys, no two rows of one key are ever in work at once, each key's rows run in id
 * order, and different keys overlap.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { engines, unique } from "../../support/engines.js";
import { consumer, createJobsTable, insertJobs, readJobs, until } from "../../support/claim-forms.js";

const ROWS = 200;
const KEYS = 10;

describe.each(engines)("advisory keys on $name", (engine) => {
  let db: AnyKysely;
  let url: string;
  const table = unique("adv_keys");
  beforeAll(async () => {
    url = engine.url();
    db = await engine.connect(url);
    await createJobsTable(engine, db, table);
  });
  afterAll(async () => {
    await engine.dropTable(db, table);
    await db.destroy();
    engine.cleanup();
  });

  test(`workers(8), ${ROWS} rows over ${KEYS} keys: one row of a key at a time, in id order; keys overlap`, async () => {
    await insertJobs(db, table, ROWS, (n) => `key-${n % KEYS}`);
    const inWorkByKey = new Map<string, number>();
    const orderByKey = new Map<string, number[]>();
    let inWork = 0;
    let maxInWork = 0;
    let sameKeyOverlaps = 0;
    const c = consumer(url, table, "advisory", {
      workers: 8,
      handle: async (seen) => {
        const key = `key-${seen.n % KEYS}`;
        const now = (inWorkByKey.get(key) ?? 0) + 1;
        inWorkByKey.set(key, now);
        if (now > 1) sameKeyOverlaps++;
        orderByKey.set(key, [...(orderByKey.get(key) ?? []), seen.id]);
        maxInWork = Math.max(maxInWork, ++inWork);
        await new Promise((r) => setTimeout(r, 5));
        inWork--;
        inWorkByKey.set(key, (inWorkByKey.get(key) ?? 1) - 1);
      },
    });
    const app = await c.app.start();
    try {
      await until(async () => c.seen.length >= ROWS && (await readJobs(db, table)).length === 0, 30_000, "every row settled");
    } finally {
      await app.stop();
    }
    expect(c.seen).toHaveLength(ROWS);
    expect(sameKeyOverlaps).toBe(0);
    for (const [, ids] of orderByKey) expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(orderByKey.size).toBe(KEYS);
    expect(maxInWork).toBeGreaterThan(1);
    expect(c.errors).toEqual([]);
    console.log(`${engine.name}: advisory, ${ROWS} rows over ${KEYS} keys, at most ${maxInWork} in work at once`);
  });
});
