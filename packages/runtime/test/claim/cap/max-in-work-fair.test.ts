/**
 * `maxInWork(n)` shared across processes: two worker processes (`support/fixtures/flow-worker.ts`)
 * with `workers(4)` each drain 60 rows of 300 ms under a cap of 3 (about 6 s of work). Each process
 * must start at least a third of the rows: a process whose delivery ends must not take its room back
 * before a process that waits for one: in the row-lock form a claim queues for a slot (`SlotRows`),
 * on Postgres and MariaDB (SQLite has no row-lock form).
 *
 * Not asserted here: the advisory form (its claims try the slot locks from a random one: 22/38 to
 * 33/27 measured, too near a third to assert) and the lease form, which has no lock to queue on and
 * is not made fair; docs/claim-forms.md gives their measured splits.
 */
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { insertJobs, matrix, startFixture, until, type WorkerProcess } from "../../support/claim-forms.js";
import { unique } from "../../support/engines.js";
import { createFlowTable, mostInWork, runsOf } from "../../support/flow-tables.js";

const CAP = 3;
const WORKERS = 4;
const ROWS = 60;
const HOLD_MS = 300;

const rowLock = matrix.filter(({ form }) => form === "rowLock");

describe.each(rowLock)("maxInWork($engine.name × $form) across two processes", ({ engine, form }) => {
  test(`2 processes × workers(${WORKERS}) under maxInWork(${CAP}): each starts at least a third of ${ROWS} rows`, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`fair_${form}`).toLowerCase();
    const children: WorkerProcess[] = [];
    try {
      await createFlowTable(db, table);
      for (let i = 0; i < 2; i++) {
        children.push(
          startFixture("test/support/fixtures/flow-worker.ts", {
            FLOW_URL: url,
            FLOW_TABLE: table,
            FLOW_FORM: form,
            FLOW_WORKERS: String(WORKERS),
            FLOW_HOLD_MS: String(HOLD_MS),
            FLOW_MAX_IN_WORK: String(CAP),
          }),
        );
      }
      await Promise.all(children.map((c) => c.waitFor((l) => l.event === "ready", 30_000, "ready")));
      // Both processes wait on an empty table: neither has a head start.
      await insertJobs(db, table, ROWS);
      const inserted = Date.now();
      const starts = (c: WorkerProcess): number => c.lines.filter((l) => l.event === "start").length;
      const done = (): number => children.reduce((sum, c) => sum + c.lines.filter((l) => l.event === "done").length, 0);
      await until(() => done() >= ROWS, 60_000, `${ROWS} rows handled`);
      const drainMs = Date.now() - inserted;
      for (const c of children) c.child.kill("SIGTERM");
      await Promise.all(children.map((c) => c.exited));

      const split = children.map(starts);
      console.log(`${engine.name} × ${form}: starts ${split.join("/")} of ${ROWS}, drained in ${drainMs} ms (${(ROWS * HOLD_MS) / CAP} ms of work at the cap)`);
      expect(children.flatMap((c) => c.lines.filter((l) => l.event === "error"))).toEqual([]);
      const runs = runsOf(
        children.map((c) => ({ pid: c.child.pid as number, lines: c.lines })),
        () => Number.POSITIVE_INFINITY,
      );
      expect(mostInWork(runs, 10)).toBeLessThanOrEqual(CAP);
      for (const n of split) expect(n).toBeGreaterThanOrEqual(ROWS / 3);
    } finally {
      for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
