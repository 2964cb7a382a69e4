/**
 * Retries in the forms that hold a row by a lock: `retry()` commits the counted attempt and
 * releases the row at once; `retryAfter(ms)` on a table without a retryAfter column releases it
 * at once too (nothing is held for the delay) and this process leaves it out of its claims for `ms`.
 */
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "./fixtures.js";
import type { AnyKysely } from "../src/database.js";
import { HandlerOutcome } from "../src/index.js";
import { engines, unique } from "./engines.js";
import { createJobsTable, insertJobs, readJobs, until, jobsSpecOf, type Seen } from "./claim-forms.js";
import { App, InboxQueue, SqlBroker, keys, silentLogger, subscriber } from "../src/index.js";

const cases = engines.flatMap((engine) => (engine.engine === "sqlite" ? (["advisory"] as const) : (["rowLock", "advisory"] as const)).map((form) => ({ engine, form })));

describe.each(cases)("retries on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test.each([
    { outcome: "retry", delay: 0 },
    { outcome: "retryAfter", delay: 400 },
  ] as const)("$outcome: the next delivery reads attempt 2, after $delay ms", async ({ outcome, delay }) => {
    const table = unique(`retry_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const seen: Seen[] = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50), async (job, ctx) => {
      seen.push({ id: Number(ctx.id), n: job.n, attempt: ctx.get(keys.attempt), at: Date.now() });
      if (seen.length > 1) return HandlerOutcome.ack();
      return outcome === "retry" ? HandlerOutcome.retry() : HandlerOutcome.retryAfter(delay);
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs"), (b) => b.include(sub))
      .start();
    try {
      await insertJobs(db, table, 1);
      await until(async () => seen.length === 2 && (await readJobs(db, table)).length === 0, 10_000, "the retried row to be acked");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
    const gap = (seen[1] as Seen).at - (seen[0] as Seen).at;
    expect(gap).toBeGreaterThanOrEqual(delay);
    expect(gap).toBeLessThan(delay + 1500);
  });
});
