/**
 * A handler that returns retry() at once, with no maxAttempts, makes a claim loop that never waits:
 * on SQLite every statement answers synchronously. Timers and stop() must still run beside it, on
 * every engine × form: a 10 ms interval keeps ticking while the row goes round, and stop() returns.
 */
import { describe, expect, test } from "vitest";
import { App, HandlerOutcome, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { createJobsTable, insertJobs, jobsSpecOf, matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";

describe.each(matrix)("a claim loop that never waits, on $engine.name × $form", ({ engine, form }) => {
  let connected!: Parameters<Parameters<typeof useEngineConnection>[1]>[0];
  useEngineConnection(engine, (c) => {
    connected = c;
  });

  test("timers keep firing while a row is retried at once, again and again, and stop() returns", async () => {
    const table = unique(`spin_${form}`);
    await createJobsTable(engine, connected.db, table);
    await insertJobs(connected.db, table, 2);
    const spec = jobsSpecOf(table, form);
    let deliveries = 0;
    const queue = InboxQueue.of(spec, "spin").workers(2).pollInterval(50);
    const app = new App({ name: "spin", version: "0", logger: silentLogger }).withBroker(SqlBroker.fromUrl(connected.url, { pool: { max: 6 } }).route(spec, "spin"), (b) =>
      b.include(
        subscriber(queue, () => {
          deliveries++;
          return HandlerOutcome.retry();
        }),
      ),
    );
    const running = await app.start();
    let ticks = 0;
    const interval = setInterval(() => ticks++, 10);
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
    } finally {
      clearInterval(interval);
    }
    const stopped = await running.stop();
    expect(deliveries, "the rows went round").toBeGreaterThan(2);
    // 1 s of a 10 ms interval: about 100 ticks when nothing starves it; a starved loop gives none.
    expect(ticks).toBeGreaterThan(20);
    expect(stopped.timedOut).toBe(false);
  }, 30_000);
});
