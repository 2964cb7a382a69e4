import { Sampler } from "@sqlinbox/dashboard";
import { dialectFor } from "@sqlinbox/kysely-dialects/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { openDatabase } from "../src/connect.js";
import { OperatorConsole } from "../src/operator-console.js";
import { resolveTables } from "../src/queue-tables.js";
import { createQueue, dropTables, ENGINES, uniqueName, type TestDatabase } from "./support/databases.js";

// The dashboard's throughput on a steady queue: rows published and settled by SQL at a known rate
// (one row every 100 ms, settled at once), so the table is empty at nearly every sample. Each
// sample must read the rows that passed through, not the depth's change (which reads 0 when the
// table drains between samples).
// At 20 rows/s a slower, loaded machine once missed by 3 rows in a window: a status read stamps its time, then reads
// the tables one after another, each some 100 ms later there. At 10/s the same lag is half the rows.
const EVERY_MS = 100;
const SAMPLE_EVERY_MS = 1000;
const RUN_MS = 5500;
/**
 * Each sample's rows (its rate times its window) against the rows the loop settled in that window,
 * by the times it recorded: a row settled while a status read runs may fall on either side of the
 * window's edges, so at least one row each side, and on a loaded host as many as the loop settled while
 * the edges' reads ran. Per window, not against the run's mean rate: a loaded host
 * stalls the loop, so the true rate itself moves from one second to the next.
 */
const ROWS_TOLERANCE = 2;
/** The rows sampled over the whole run against the rows settled in it. */
const RUN_TOLERANCE = 0.05;

/** A table whose ack deletes the row, with an id the database generates that a drained table does not hand out again. */
async function deleteAckTable(t: TestDatabase, name: string): Promise<string> {
  const id = t.name === "sqlite" ? "integer primary key autoincrement" : t.types.id;
  await sql.raw(`create table ${name} (id ${id}, attempt int not null default 1, payload ${t.types.text}, locked_until ${t.types.time} null)`).execute(t.db);
  return name;
}

describe.each(ENGINES)("the dashboard's throughput on %s", (_name, open) => {
  test("reads the rows settled per second, within tolerance, on a table that drains between samples", { timeout: 60_000 }, async () => {
    const t = await open();
    const deleted = await deleteAckTable(t, uniqueName("tp_del"));
    const kept = await createQueue(t, uniqueName("tp_kept"), { lease: true, done: true });
    // Ids written by the application on Postgres and MariaDB (no sequence); SQLite's plain rowid is handed out again once the table drains.
    const unknown = uniqueName("tp_unk");
    await sql
      .raw(
        `create table ${unknown} (id ${t.name === "sqlite" ? "integer primary key" : "int primary key"}, attempt int not null default 1, payload ${t.types.text}, locked_until ${t.types.time} null)`,
      )
      .execute(t.db);
    const opened = await openDatabase(t.url);
    let stop = false;
    let settled = 0;
    /** When each row was settled, on the database's clock (the time written as processedAt), as the samples' times are. */
    const settledAt: number[] = [];
    let loop: Promise<void> = Promise.resolve();
    try {
      const tables = await resolveTables(opened, { tables: [deleted, kept, unknown] });
      const operator = new OperatorConsole(opened, tables);
      const time = dialectFor(opened.engine).time;
      const started = Date.now();
      loop = (async () => {
        for (let k = 0; !stop; k++) {
          await t.db.insertInto(deleted).values({ payload: "{}" }).execute();
          await t.db
            .insertInto(kept)
            .values({ payload: "{}", created_at: t.types.now(0) })
            .execute();
          const at = opened.now();
          await t.db.deleteFrom(deleted).execute();
          await t.db
            .updateTable(kept)
            .set({ processed_at: time.encode(at, 3) })
            .where("processed_at", "is", null)
            .execute();
          settledAt.push(at.getTime());
          settled++;
          const wait = started + (k + 1) * EVERY_MS - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
      })();
      // The sampler starts once the loop runs steadily.
      await new Promise((r) => setTimeout(r, 500));
      const settledAtStart = settled;
      // Each status read's span on the database's clock, by the time it reports: a row settled while a read ran may
      // fall on either side of that read's edge.
      const reads = new Map<number, { readonly start: number; readonly end: number }>();
      const status = async (since?: string) => {
        const start = opened.now().getTime();
        const report = await operator.status(since);
        reads.set(Date.parse(report.at), { start, end: opened.now().getTime() });
        return report;
      };
      const source = new Proxy(operator, {
        get: (target, prop) => {
          if (prop === "status") return status;
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const sampler = new Sampler(source, SAMPLE_EVERY_MS);
      const from = Date.now();
      sampler.start();
      await new Promise((r) => setTimeout(r, RUN_MS));
      await sampler.stop();
      const trueRate = ((settled - settledAtStart) * 1000) / (Date.now() - from);
      stop = true;
      await loop;

      const samples = sampler.samples;
      expect(samples.length).toBeGreaterThanOrEqual(4);
      // Near the nominal 10/s (the loop's own pace), so a reading of 0 cannot pass for a stalled loop.
      expect(trueRate).toBeGreaterThan(5);
      for (const table of [deleted, kept]) {
        // The table is (nearly) empty at every sample: the depth says nothing about the rows that passed through.
        for (const s of samples) expect(s.tables[table]!.ready + (s.tables[table]!.inWork ?? 0)).toBeLessThanOrEqual(1);
        const windows = samples.slice(1).map((s, i) => {
          // A read less than half an interval after the one before is measured from the same earlier read.
          const { from } = s;
          const rate = s.tables[table]!.finishedPerSecond;
          const rows = rate === null ? null : (rate * (s.at - from)) / 1000;
          // Rows settled while the reads at the window's edges ran: on a loaded host a read spans several of the loop's steps.
          const during = (edge: number) => {
            const read = reads.get(edge);
            return read === undefined ? 0 : settledAt.filter((at) => at >= read.start && at <= read.end).length;
          };
          const slack = Math.max(ROWS_TOLERANCE, 1 + during(from) + during(s.at));
          return { rate, rows, truth: settledAt.filter((at) => at > from && at <= s.at).length, slack, meets: from === samples[i]!.at };
        });
        const said = `${table} against ${trueRate}/s: ${JSON.stringify(windows)}`;
        for (const w of windows) {
          expect(w.rows, said).not.toBeNull();
          expect(Math.abs(w.rows! - w.truth), said).toBeLessThanOrEqual(w.slack);
        }
        const run = windows.filter((w) => w.meets);
        const sampledRows = run.reduce((a, w) => a + w.rows!, 0);
        const trueRows = run.reduce((a, w) => a + w.truth, 0);
        expect(Math.abs(sampledRows - trueRows) / trueRows, said).toBeLessThanOrEqual(RUN_TOLERANCE);
      }
      // Nothing counts the rows settled on a table with application-written ids: unknown, said why, never 0.
      const last = samples.at(-1)!.tables[unknown]!;
      expect(last.finishedPerSecond).toBeNull();
      expect(last.finishedUnknown).toMatch(/sequence or auto-increment/);
    } finally {
      stop = true;
      await loop.catch(() => {});
      await opened.close();
      await dropTables(t, deleted, kept, unknown);
      await t.close();
    }
  });
});
