/**
 * A poison row ahead of 50 good rows, `workers(1)`, on every form × engine: the good rows are
 * handled at full speed (never waiting on the poison row for more than a claim), and the poison
 * row ends as the policy says — kept (no dead letter declared) or in the dead letter.
 * Measured times go to the test's note (console) so the docs can cite them.
 */
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../support/fixtures.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createTables, deadJobsOf, dropTables, groupedJobsOf, insertGrouped, readDead, readSource } from "../support/dead-letter-tables.js";

const GOOD = 50;
/** Far more than 50 good rows take at full speed here (well under a second), far less than a lease term stalled behind the poison row. */
const FULL_SPEED_MS = 5_000;

describe.each(matrix)("a poison row on $engine.name × $form, workers(1)", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  async function drain(poison: "undecodable" | "throws", withDeadLetter: boolean) {
    const jobs = unique(`poison_${form}`);
    const dead = unique(`poison_dead_${form}`);
    await createTables(engine, db, jobs, dead);
    const spec = groupedJobsOf(jobs, form);
    const handled = new Set<number>();
    let poisonCalls = 0;
    let queue = InboxQueue.of(spec, "jobs").pollInterval(50);
    if (withDeadLetter) queue = queue.deadLetter(deadJobsOf(dead), { maxAttempts: 3 });
    const sub = subscriber(queue, async (job) => {
      if (job.n === 0) {
        poisonCalls++;
        throw new Error("always fails");
      }
      handled.add(job.n);
      return HandlerOutcome.ack();
    });
    // A lease of 30 s: a stall behind the poison row would show as seconds, not milliseconds.
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(
        SqlBroker.fromUrl(url, { pool: { max: 3 } })
          .lease(30_000)
          .route(spec, "jobs"),
        (b) => b.include(sub),
      )
      .start();
    try {
      // The poison row first, so it comes first in claim order.
      await insertGrouped(db, jobs, 1, { poison: poison === "undecodable" });
      await insertGrouped(db, jobs, GOOD, { from: 1 });
      const started = Date.now();
      await until(() => handled.size === GOOD, 20_000, `the ${GOOD} good rows behind the poison row`);
      const goodMs = Date.now() - started;
      // Acks of the lease form are written just after the handler returns: wait for the table to settle.
      const left = withDeadLetter ? 0 : 1;
      await until(async () => (await readSource(db, jobs)).length === left, 20_000, `${left} row left in the source`);
      if (withDeadLetter) await until(async () => (await readDead(db, dead)).length === 1, 20_000, "the poison row in the dead letter");
      const result = { goodMs, poisonCalls, source: await readSource(db, jobs), moved: await readDead(db, dead) };
      console.log(`poison row (${poison}${withDeadLetter ? ", dead letter" : ""}) on ${engine.name} × ${form}: ${GOOD} good rows in ${goodMs} ms`);
      return result;
    } finally {
      await app.stop();
      await dropTables(db, jobs, dead);
    }
  }

  test("undecodable, no dead letter: the good rows flow, the poison row is kept", async () => {
    const { goodMs, source, poisonCalls } = await drain("undecodable", false);
    expect(goodMs).toBeLessThan(FULL_SPEED_MS);
    expect(poisonCalls).toBe(0);
    expect(source).toHaveLength(1);
    expect(source[0]).toMatchObject({ grp: "jobs" });
  });

  test("undecodable, with a dead letter: the good rows flow, the poison row is moved with its decode error", async () => {
    const { goodMs, source, moved } = await drain("undecodable", true);
    expect(goodMs).toBeLessThan(FULL_SPEED_MS);
    expect(source).toEqual([]);
    expect(moved).toHaveLength(1);
    expect(moved[0]?.payload).toBe("{not json");
    expect(moved[0]?.lastError).toMatch(/JSON|decode/i);
  });

  test("a handler that always throws, maxAttempts 3: the good rows flow while it backs off, then it is moved", async () => {
    const { goodMs, source, moved, poisonCalls } = await drain("throws", true);
    expect(goodMs).toBeLessThan(FULL_SPEED_MS);
    expect(poisonCalls).toBe(3);
    expect(source).toEqual([]);
    expect(moved).toEqual([{ payload: '{"n":0}', lastError: "Error: always fails", failedAttempts: 3 }]);
  });
});
