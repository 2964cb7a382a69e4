/**
 * FIFO heads in claim order, live on every engine × form that has fifo (row lock, lease; an
 * advisory key and fifo exclude each other):
 * - order: a better priority published later goes first while nothing is in work; a delayed row
 *   (retry_after ahead) moves behind the rows after it, and a head delayed by its handler too;
 * - exclusivity: while the head is in work (its handler waits on a promise), a row with a better
 *   priority is not delivered until the head settles — with four workers polling the group.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, silentLogger, subscriber, type RunningApp } from "../../src/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { unique, type TestEngine } from "../support/engines.js";
import { createFifoTable, fifoSpecOf, insertFifoRows } from "../support/fifo-tables.js";
import { sleep } from "../support/sleep.js";

const GROUP = "g";

interface Delivery {
  readonly n: number;
  readonly attempt: number | undefined;
  readonly event: "start" | "end";
}

type Handle = (n: number, attempt: number | undefined) => Promise<"ack" | "later">;

/** One app, one subscription on the group with workers(4), recording every start and end. */
async function startApp(url: string, table: string, form: ClaimForm, log: Delivery[], handle: Handle): Promise<RunningApp> {
  const spec = fifoSpecOf(table, form);
  const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } });
  const sub = subscriber(InboxQueue.of(spec, GROUP).workers(4).batch(4).pollInterval(20), async (job, ctx) => {
    const attempt = ctx.get(keys.attempt);
    log.push({ n: job.n, attempt, event: "start" });
    const outcome = await handle(job.n, attempt);
    log.push({ n: job.n, attempt, event: "end" });
    return outcome === "ack" ? HandlerOutcome.ack() : HandlerOutcome.retryAfter(1500);
  });
  return new App({ name: "fifo-order", version: "0", logger: silentLogger }).withBroker(broker.route(spec, GROUP), (b) => b.include(sub)).start();
}

/** No start while another row of the group is in work. */
function overlaps(log: readonly Delivery[]): string[] {
  const found: string[] = [];
  let inWork: number | undefined;
  for (const d of log) {
    if (d.event === "start" && inWork !== undefined) found.push(`${d.n} started while ${inWork} was in work`);
    inWork = d.event === "start" ? d.n : undefined;
  }
  return found;
}

const starts = (log: readonly Delivery[]) => log.filter((d) => d.event === "start").map((d) => d.n);

describe.each(matrix.filter((m) => m.form !== "advisory"))("fifo head in claim order on $engine.name × $form", ({ engine, form }) => {
  async function withTable(prefix: string, body: (db: AnyKysely, url: string, table: string) => Promise<void>): Promise<void> {
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`${prefix}_${form}`).toLowerCase();
    try {
      await createFifoTable(engine as TestEngine, db, table);
      await body(db, url, table);
    } finally {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db).catch(() => {});
      await db.destroy();
    }
  }

  test("a better priority published later goes first; a delayed row and a head delayed by its handler move behind", async () => {
    await withTable("fifo_order", async (db, url, table) => {
      const inAnHour = engine.time(new Date(Date.now() + 3_600_000));
      // Ids in this order: 0, 1, 2 (priority 5), 3 (priority 0 but delayed an hour), then 4 (priority 1, published last).
      await insertFifoRows(db, table, [
        { grp: GROUP, n: 0, priority: 5 },
        { grp: GROUP, n: 1, priority: 5 },
        { grp: GROUP, n: 2, priority: 5 },
        { grp: GROUP, n: 3, priority: 0, retryAfter: inAnHour },
      ]);
      await insertFifoRows(db, table, [{ grp: GROUP, n: 4, priority: 1 }]);
      const log: Delivery[] = [];
      // Row 0's first attempt asks for a 1.5 s delay: it moves behind 1 and 2, and comes back after them.
      const app = await startApp(url, table, form, log, async (n, attempt) => (n === 0 && attempt === 1 ? "later" : "ack"));
      try {
        await until(() => log.filter((d) => d.event === "end").length === 5, 15_000, "five deliveries");
        await sleep(200);
      } finally {
        await app.stop();
      }
      expect(starts(log)).toEqual([4, 0, 1, 2, 0]);
      expect(log.filter((d) => d.event === "start").map((d) => d.attempt)).toEqual([1, 1, 1, 1, 2]);
      expect(overlaps(log)).toEqual([]);
      // The delayed row is still there, untouched: it never blocked the group.
      const left = await sql<{ payload: string; attempt: number }>`SELECT payload, attempt FROM ${sql.id(table)}`.execute(db);
      expect(left.rows.map((r) => [JSON.parse(r.payload).n, Number(r.attempt)])).toEqual([[3, 1]]);
    });
  });

  test("a better priority published while the head is in work waits until the head settles", async () => {
    await withTable("fifo_race", async (db, url, table) => {
      await insertFifoRows(db, table, [{ grp: GROUP, n: 0, priority: 5 }]);
      const log: Delivery[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const app = await startApp(url, table, form, log, async (n) => {
        if (n === 0) await gate;
        return "ack";
      });
      try {
        await until(() => log.length === 1, 10_000, "row 0 in work");
        // Behind the broker's back (no wake): the four workers find it at their next polls.
        await insertFifoRows(db, table, [
          { grp: GROUP, n: 1, priority: 0 },
          { grp: GROUP, n: 2, priority: 1 },
        ]);
        await sleep(600); // 30 poll intervals
        expect(starts(log)).toEqual([0]);
        release();
        await until(() => log.filter((d) => d.event === "end").length === 3, 10_000, "rows 1 and 2");
      } finally {
        release();
        await app.stop();
      }
      expect(starts(log)).toEqual([0, 1, 2]);
      expect(overlaps(log)).toEqual([]);
    });
  });
});
