/**
 * A bulk delete racing a drain, on every engine × form where another session can see what a claim
 * holds (SQLite's advisory keys live in the process that holds them): the operator's `bulkAct`
 * deletes a table's rows in batches while an app with four workers takes them. It never touches a
 * row in work: every row is either handled (its ack lands, no settlement fails) or deleted, never both
 * and never neither, and the rows it passed over are counted in work.
 */
import { bulkAct, noCounts, type BulkCounts } from "@sqlinbox/database";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, subscriber } from "../../src/index.js";
import { MemoryLogger } from "../../src/testing/memory-logger.js";
import { createJobsTable, insertJobs, jobsSpecOf, matrix, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { deferred } from "../support/fixtures.js";
import { sleep } from "../support/sleep.js";

const ROWS = 200;

describe.each(matrix.filter(({ engine, form }) => !(engine.engine === "sqlite" && form === "advisory")))(
  "a bulk delete racing a drain, $engine.name × $form",
  ({ engine, form }) => {
    let db: AnyKysely;
    let url: string;
    const tables: string[] = [];
    beforeAll(async () => {
      url = engine.url();
      db = await engine.connect(url);
    });
    afterAll(async () => {
      for (const t of tables) await engine.dropTable(db, t);
      await db.destroy();
      engine.cleanup();
    });

    test(`${ROWS} rows, four workers, deleted 20 at a time: each row handled or deleted, once; no running row touched`, async () => {
      const table = unique(`bulk_race_${form}`).toLowerCase();
      tables.push(table);
      await createJobsTable(engine, db, table);
      await insertJobs(db, table, ROWS);
      const spec = jobsSpecOf(table, form);
      const started = new Set<string>();
      const succeeded = new Set<string>();
      const failures: string[] = [];
      const held = deferred();
      const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } })
        .lease(5000)
        .route(spec, "jobs");
      const app = await new App({ name: "bulk-race", version: "0", logger: new MemoryLogger(), shutdownGrace: 5000 })
        .on("succeeded", (e) => void succeeded.add(String(e.id)))
        .on("leaseLost", (e) => void failures.push(`leaseLost ${String(e.id)}`))
        .on("settlementFailed", (e) => void failures.push(`settlementFailed ${String(e.id)}: ${String(e.error)}`))
        .withBroker(broker, (b) =>
          b.include(
            subscriber(InboxQueue.of(spec, "jobs").workers(4).pollInterval(20), async (_job, ctx) => {
              started.add(String(ctx.id));
              // The fifth and sixth rows started stay in work until the bulk delete is done, the other two workers drain
              // on: the delete finds rows in work whatever the machine's speed (with only short handlers, a loaded
              // machine's workers were once all between rows as it passed).
              if (started.size === 5 || started.size === 6) await held.promise;
              else await sleep(40);
              return HandlerOutcome.ack();
            }),
          ),
        )
        .start();
      let counts: BulkCounts = noCounts();
      try {
        await until(() => started.size >= 8, 10_000, "the drain to be under way");
        const ids = (await db.selectFrom(table).select("id").orderBy("id").execute()).map((r) => r.id as unknown);
        const place = { db, dialect: dialectFor(engine.engine), controlTableMissing: (t: string, cause: unknown) => new Error(`no control table for ${t}`, { cause }) };
        counts = await bulkAct(place, spec.description, { action: "delete", route: "jobs", ids, now: new Date(), batch: 20 });
        held.resolve();
        expect(counts.touched + counts.inWork + counts.notFound).toBe(ids.length);
        await until(async () => (await db.selectFrom(table).select("id").execute()).length === 0, 20_000, "the table to empty");
        await until(() => succeeded.size === started.size, 10_000, "every started row to settle");
      } finally {
        held.resolve();
        await app.stop();
        await broker.close();
      }
      expect(failures).toEqual([]);
      // Each row handled or deleted, never both (a deleted running row's ack would fail) and never neither.
      expect(succeeded.size + counts.touched).toBe(ROWS);
      expect([...succeeded].sort()).toEqual([...started].sort());
      // The two held rows (at least) were in work when the batches came: passed over and counted.
      expect(counts.inWork).toBeGreaterThanOrEqual(2);
    });
  },
);
