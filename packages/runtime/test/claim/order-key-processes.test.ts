/**
 * Ordered keys across three OS processes, on every engine × form that has them (row lock and
 * lease; SQLite on a file, lease only): three worker processes (`support/fixtures/order-key-worker.ts`),
 * each one subscription with `workers(4)`, drain 2,000 rows spread over 50 keys, with priorities
 * that put claim order far from id order. Each handler writes a `start` and an `end` event into a
 * results table, whose generated seq orders the events of every process: within each key the
 * rows must start in id order, each once, none before the one before it ended; and every process
 * must have had more than one key in work at once.
 */
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { createInboxTable } from "../../src/index.js";
import { matrix, startFixture, until, type WorkerProcess } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createResultsTable, groupRuns, readResults } from "../support/fifo-tables.js";
import { insertLedgerRows, keysInWorkPerProcess, ledgerIds, orderedSpecOf, type LedgerRow } from "../support/order-key-tables.js";

const ROWS = 2000;
const KEYS = 50;
const PROCESSES = 3;

/** Row i: its key spread so that a key's rows are far apart in id order, its priority so that claim order is not id order. */
function rowAt(i: number): LedgerRow {
  return { account: (i * 7 + Math.floor(i / 50)) % KEYS, priority: (i * 13) % 5 };
}

describe.each(matrix.filter((m) => m.form !== "advisory"))("ordered keys across three processes on $engine.name × $form", ({ engine, form }) => {
  test(`${ROWS} rows over ${KEYS} keys, ${PROCESSES} processes with workers(4): id order within each key, one row of a key at a time, several keys in work in every process`, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`ordered_${form}`).toLowerCase();
    const results = unique("ordered_results").toLowerCase();
    const children: WorkerProcess[] = [];
    try {
      await createInboxTable(db, orderedSpecOf(table, form));
      await createResultsTable(engine, db, results);
      await insertLedgerRows(
        db,
        table,
        Array.from({ length: ROWS }, (_, i) => rowAt(i)),
      );
      const rows = await ledgerIds(db, table);
      expect(rows.length).toBe(ROWS);
      for (let i = 0; i < PROCESSES; i++) {
        children.push(startFixture("test/support/fixtures/order-key-worker.ts", { ORDER_URL: url, ORDER_FORM: form, ORDER_TABLE: table, ORDER_RESULTS: results }));
      }
      await Promise.all(children.map((c) => c.waitFor((l) => l.event === "ready", 30_000, "ready")));
      const ready = Date.now();
      await until(async () => (await readResults(db, results)).filter((e) => e.event === "end").length >= ROWS, 240_000, "every row handled");
      const drainMs = Date.now() - ready;
      for (const c of children) c.child.kill("SIGTERM");
      await Promise.all(children.map((c) => c.exited));

      const events = await readResults(db, results);
      expect(events.filter((e) => e.event === "start").length).toBe(ROWS);
      for (let key = 0; key < KEYS; key++) {
        const { order, overlaps } = groupRuns(events, String(key));
        expect(overlaps, `key ${key}`).toEqual([]);
        expect(order, `key ${key}`).toEqual(rows.filter((r) => r.account === key).map((r) => r.id));
      }
      const most = keysInWorkPerProcess(events);
      expect([...most.keys()].sort()).toEqual(children.map((c) => c.child.pid).sort());
      for (const [pid, keys] of most) expect(keys, `process ${pid}: most keys in work at once`).toBeGreaterThan(1);
      expect(children.flatMap((c) => c.lines.filter((l) => l.event === "error"))).toEqual([]);
      const split = children.map((c) => events.filter((e) => e.event === "start" && e.pid === c.child.pid).length).join(" + ");
      console.log(`${engine.name} × ${form}: ${ROWS} rows in ${drainMs} ms, split ${split}, most keys in work at once per process ${[...most.values()].join(", ")}`);
    } finally {
      for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
      await engine.dropTable(db, table).catch(() => {});
      await engine.dropTable(db, results).catch(() => {});
      await db.destroy();
    }
  }, 300_000);
});
