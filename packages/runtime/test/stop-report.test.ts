/**
 * `stop()` reports what it did, on every engine × form: one delivery finishes within the grace,
 * one outlives it and is abandoned — rolled back (row lock), its lock released (advisory), or
 * left to its lease (lease); the connections the pool held are counted as it closes.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../src/drivers/database.js";
import { FORM_FACTS } from "../src/claim/form-facts.js";
import { stopReportOf } from "../src/stop-report.js";
import { unique } from "./support/engines.js";
import { consumer, createJobsTable, insertJobs, matrix, readJobs, until } from "./support/claim-forms.js";

describe("stopReportOf", () => {
  test("an abandoned delivery counts by its form", () => {
    const report = stopReportOf(
      [
        { stop: FORM_FACTS.rowLock.stop, finished: 2, unstarted: 0, abandoned: 1, timedOut: false },
        { stop: FORM_FACTS.advisory.stop, finished: 1, unstarted: 0, abandoned: 2, timedOut: false },
        { stop: FORM_FACTS.lease.stop, finished: 3, unstarted: 4, abandoned: 1, timedOut: true },
      ],
      7,
      120,
      false,
    );
    expect(report).toEqual({ finished: 6, rolledBack: 1, givenBack: 7, locksReleased: 2, connectionsClosed: 7, durationMs: 120, timedOut: true });
  });
});

describe.each(matrix)("$engine.name × $form", ({ engine, form }) => {
  let setup: AnyKysely;
  let url: string;
  beforeAll(async () => {
    url = engine.url();
    setup = await engine.connect(url);
  });
  afterAll(async () => {
    await setup.destroy();
    engine.cleanup();
  });

  test("stop() reports the delivery that finished and the one the grace cut short", async () => {
    const table = unique(`stop_${form}`).toLowerCase();
    await createJobsTable(engine, setup, table);
    try {
      await insertJobs(setup, table, 2);
      let release!: () => void;
      const finishing = new Promise<void>((resolve) => (release = resolve));
      const c = consumer(url, table, form, {
        workers: 2,
        shutdownGrace: 400,
        // n = 0 finishes once the stop began; n = 1 outlives the grace.
        handle: (seen) => (seen.n === 0 ? finishing : new Promise<void>(() => {})),
      });
      const app = await c.app.start();
      await until(() => c.seen.length === 2, 10_000, "both rows in work");
      const stopping = app.stop();
      release();
      const report = await stopping;
      expect(report.finished).toBe(1);
      expect(report.rolledBack).toBe(form === "rowLock" ? 1 : 0);
      expect(report.locksReleased).toBe(form === "advisory" ? 1 : 0);
      expect(report.givenBack).toBe(form === "rowLock" ? 0 : 1);
      expect(report.timedOut).toBe(false);
      expect(report.connectionsClosed).toBeGreaterThanOrEqual(1);
      expect(report.durationMs).toBeLessThan(2000);
      // The finished row is gone; the abandoned one is still in the table.
      expect((await readJobs(setup, table)).map((r) => r.k)).toEqual(["row-1"]);
    } finally {
      await engine.dropTable(setup, table);
    }
  });
});
