/**
 * `rateLimit({ max: 10, perMs: 1000 })` across real processes, on every engine × form: three worker
 * processes (`fixtures/flow-worker.ts`) with `workers(4)` each, over a backlog far larger than the
 * limit lets through. Each handler reports when it started; over the first 5 s, no window of 1 s
 * holds more than 10 starts, and the starts number within 10% of the limit (50).
 *
 * SQLite: one process per file in the advisory form (its key locks live in the process), so that
 * form runs one process there; its lease form runs three.
 */
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../src/drivers/database.js";
import { insertJobs, matrix, startFixture, until, type WorkerProcess } from "./claim-forms.js";
import { engines, unique } from "./engines.js";
import { createFlowTable, mostStartsInWindow } from "./flow-tables.js";

afterAll(() => {
  for (const e of engines) e.cleanup();
});

const MAX = 10;
const PER_MS = 1000;
const SPAN_MS = 5000;
const ROWS = 150;
/** How far the processes' database-corrected clocks may disagree (each offset is measured to about a ms). */
const CLOCKS_AGREE_MS = 20;

describe.each(matrix)("rateLimit($engine.name × $form)", ({ engine, form }) => {
  const processes = engine.engine === "sqlite" && form === "advisory" ? 1 : 3;
  test(`${processes} process(es) × workers(4) under rateLimit({ max: ${MAX}, perMs: ${PER_MS} }): at most ${MAX} starts in any 1 s, ${(MAX * SPAN_MS) / PER_MS} ± 10% in 5 s`, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`rate_${form}`).toLowerCase();
    const children: WorkerProcess[] = [];
    try {
      await createFlowTable(db, table);
      await insertJobs(db, table, ROWS);
      for (let i = 0; i < processes; i++) {
        children.push(
          startFixture("test/fixtures/flow-worker.ts", {
            FLOW_URL: url,
            FLOW_TABLE: table,
            FLOW_FORM: form,
            FLOW_WORKERS: "4",
            FLOW_HOLD_MS: "5",
            FLOW_RATE_MAX: String(MAX),
            FLOW_RATE_PER_MS: String(PER_MS),
          }),
        );
      }
      await Promise.all(children.map((c) => c.waitFor((l) => l.event === "ready", 30_000, "ready")));
      const starts = (): number[] => children.flatMap((c) => c.lines.filter((l) => l.event === "start").map((l) => l.time));
      await until(() => starts().length > 0, 30_000, "a first start");
      const first = Math.min(...starts());
      await until(() => Date.now() > first + SPAN_MS + 500, SPAN_MS + 10_000, "the span");
      for (const c of children) c.child.kill("SIGTERM");
      await Promise.all(children.map((c) => c.exited));

      const all = starts();
      const inSpan = all.filter((t) => t < first + SPAN_MS);
      // Each process reports its start on its host clock; the limit holds on each one's database-corrected
      // clock, and the measured offsets of processes on one host agree within a few ms: a window that
      // much shorter than perMs holds at most max starts.
      expect(mostStartsInWindow(all, PER_MS - CLOCKS_AGREE_MS)).toBeLessThanOrEqual(MAX);
      const expected = (MAX * SPAN_MS) / PER_MS;
      expect(inSpan.length).toBeGreaterThanOrEqual(expected * 0.9);
      expect(inSpan.length).toBeLessThanOrEqual(expected * 1.1);
      expect(children.flatMap((c) => c.lines.filter((l) => l.event === "error"))).toEqual([]);
      const split = children.map((c) => c.lines.filter((l) => l.event === "start" && l.time < first + SPAN_MS).length).join(" + ");
      console.log(`${engine.name} × ${form}: ${inSpan.length} starts in ${SPAN_MS} ms (${split}), at most ${mostStartsInWindow(all, PER_MS)} in any ${PER_MS} ms`);
    } finally {
      for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
