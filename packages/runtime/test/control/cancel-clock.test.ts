/**
 * `broker.cancel` on a host whose clock runs 60 s ahead of the database's, on every engine's lease
 * form: "in work" is a live lease, judged on the database's clock, so a running row is signalled (its
 * handler aborts) and not removed, while a queued row is removed. The canceller is a process of its
 * own whose `Date` reads a minute ahead (`test/support/skew-host-clock.mjs`); the worker's clock is
 * right. The row-lock and advisory forms judge "in work" by a lock, not a time: no clock to skew.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { createControlTable } from "../../src/index.js";
import { createJobsTable, insertJobs, matrix, readJobs, startFixture, until, type WorkerLine, type WorkerProcess } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";

const SKEW_MS = 60_000;
const skewHostClock = join(dirname(fileURLToPath(import.meta.url)), "../../../../test/support/skew-host-clock.mjs");

type Line = WorkerLine & { readonly event: string; readonly result?: string; readonly hostNow?: number; readonly code?: string };
const is =
  (event: string, id?: number) =>
  (l: WorkerLine): boolean =>
    (l as Line).event === event && (id === undefined || l.id === id);

describe.each(matrix.filter(({ form }) => form === "lease"))("cancel from a host 60 s ahead of the database, $engine.name × $form", ({ engine, form }) => {
  let db: AnyKysely;
  let url: string;
  const workers: WorkerProcess[] = [];
  const tables: string[] = [];

  beforeAll(async () => {
    url = engine.url();
    db = await engine.connect(url);
    await createControlTable(db);
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill("SIGKILL");
    for (const t of tables) await engine.dropTable(db, t);
    await db.destroy();
  });

  /** `broker.cancel(route, id)` from a process whose clock reads `SKEW_MS` ahead: its answer, and how far ahead its clock read. */
  const cancelFromSkewedHost = async (table: string, route: string, id: number): Promise<string | undefined> => {
    const canceller = startFixture("test/support/fixtures/canceller.ts", {
      WORKER_URL: url,
      WORKER_TABLE: table,
      WORKER_ROUTE: route,
      WORKER_FORM: form,
      CANCEL_ID: String(id),
      NODE_OPTIONS: `${process.env["NODE_OPTIONS"] ?? ""} --import=${skewHostClock}`.trim(),
      SQLINBOX_TEST_HOST_SKEW_MS: String(SKEW_MS),
    });
    workers.push(canceller);
    const line = (await canceller.waitFor(is("cancelled"), 30_000, "the cancel's answer")) as Line;
    // The canceller's host clock did read a minute ahead of this process's.
    expect((line.hostNow ?? 0) - Date.now()).toBeGreaterThan(SKEW_MS - 5_000);
    expect(await canceller.exited).toBe(0);
    return line.result;
  };

  test('a running row answers "signalled" and its handler aborts; a queued row answers "removed"', async () => {
    const table = unique(`cancel_skew_${form}`).toLowerCase();
    tables.push(table);
    await createJobsTable(engine, db, table);
    const route = unique("jobs");
    await insertJobs(db, table, 3);
    const [inWork, next, queued] = (await readJobs(db, table)).map((r) => r.id) as [number, number, number];
    // One worker holding its row far longer than its 2 s lease, which its keeper extends: the lease stays live.
    const worker = startFixture("test/support/fixtures/control-worker.ts", {
      WORKER_URL: url,
      WORKER_TABLE: table,
      WORKER_ROUTE: route,
      WORKER_FORM: form,
      WORKER_WORKERS: "1",
      WORKER_HOLD_MS: "60000",
      WORKER_POLL_MS: "100",
      WORKER_LISTEN: "0",
    });
    workers.push(worker);
    await worker.waitFor(is("start", inWork), 20_000, "the first row to start");

    expect(await cancelFromSkewedHost(table, route, queued)).toBe("removed");
    expect((await readJobs(db, table)).map((r) => r.id)).toEqual([inWork, next]);

    // On the host's clock the running row's lease ran out a minute ago; on the database's it is live.
    expect(await cancelFromSkewedHost(table, route, inWork)).toBe("signalled");
    const aborted = (await worker.waitFor(is("aborted", inWork), 10_000, "the handler's signal to abort")) as Line;
    expect(aborted.code).toBe("Cancelled");
    await worker.waitFor(is("dropped", inWork), 10_000, "the cancelled delivery's drop");
    await worker.waitFor(is("start", next), 10_000, "the next row to start");
    await until(async () => (await readJobs(db, table)).length === 1, 5_000, "the dropped row to go");
    expect((await readJobs(db, table)).map((r) => r.id)).toEqual([next]);
    expect(await cancelFromSkewedHost(table, route, inWork)).toBe("not found");
    expect((worker.lines as Line[]).filter((l) => l.event === "error")).toEqual([]);
    worker.child.kill("SIGTERM");
    await worker.exited;
  });
});
