/**
 * Cancel requests whose row is gone, on every engine × form: a cancel of a row in work leaves a
 * request in the control table until the process running the row serves it. When the row finished
 * before any process read the request (or in a process that stopped before it cleared it), the
 * request is done: an app's watch finds its row gone, clears it, and a later row that takes the
 * same id (a new table's first rows, SQLite reusing its largest rowid) is never cancelled by it.
 * A request whose row still waits in its queue stays, and cancels the row as it starts.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createControlTable, subscriber } from "../../src/index.js";
import { createJobsTable, insertJobs, jobsSpecOf, matrix, readJobs, until } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { MemoryLogger } from "../../src/testing/memory-logger.js";

describe.each(matrix)("cancel requests whose row is gone, $engine.name × $form", ({ engine, form }) => {
  let db: AnyKysely;
  let url: string;
  const tables: string[] = [];

  beforeAll(async () => {
    url = engine.url();
    db = await engine.connect(url);
    await createControlTable(db);
  });
  afterAll(async () => {
    for (const t of tables) await engine.dropTable(db, t);
    await db.destroy();
    engine.cleanup();
  });

  const requestsOf = async (route: string): Promise<string[]> =>
    (await db.selectFrom("sqlinbox_control").select(["target"]).where("kind", "=", "cancel").where("route", "=", route).execute()).map((r) => String(r.target));

  /** An app serving `route` on `table`: each start is recorded with whether its signal was already aborted, then acked (or dropped once aborted). */
  const serve = async (table: string, route: string) => {
    const starts: Array<{ id: string; aborted: boolean }> = [];
    const events: string[] = [];
    const broker = SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(jobsSpecOf(table, form), route);
    const app = new App({ name: "stale-cancel", version: "0", logger: new MemoryLogger(), shutdownGrace: 2000 })
      .on("succeeded", (e) => void events.push(`succeeded ${String(e.id)}`))
      .on("cancelled", (e) => void events.push(`cancelled ${String(e.id)}`))
      .withBroker(broker, (b) =>
        b.include(
          subscriber(InboxQueue.of(jobsSpecOf(table, form), route).pollInterval(50), async (_job, ctx) => {
            starts.push({ id: String(ctx.id), aborted: ctx.signal.aborted });
            if (ctx.signal.aborted) await ctx.sleep(10_000); // rejects with the signal's reason: the row is dropped
            return HandlerOutcome.ack();
          }),
        ),
      );
    const running = await app.start();
    return {
      starts,
      events,
      stop: async () => {
        await running.stop();
        await broker.close();
      },
    };
  };

  test("a request whose row is gone is cleared at the next read, and a later row with its id runs uncancelled", async () => {
    const table = unique(`stale_${form}`).toLowerCase();
    tables.push(table);
    await createJobsTable(engine, db, table);
    const route = unique("stale");
    // What a cancel leaves when its row finished before any app read the request: row 1 no longer exists.
    for (const query of dialectFor(engine.engine).control.requestCancel(route, "1", new Date())) await db.executeQuery(query);
    expect(await requestsOf(route)).toEqual(["1"]);
    const app = await serve(table, route);
    try {
      await until(async () => (await requestsOf(route)).length === 0, 5000, "the stale request to be cleared");
      // The new row takes id 1 again (the start below says so: the app may finish it before any read of the table).
      await insertJobs(db, table, 1);
      await until(() => app.events.length === 1, 10_000, "row 1 to finish");
      expect(app.starts).toEqual([{ id: "1", aborted: false }]);
      expect(app.events).toEqual(["succeeded 1"]);
    } finally {
      await app.stop();
    }
  });

  test("a request whose row waits in its queue stays: the row is cancelled as it starts, and the request is cleared", async () => {
    const table = unique(`queued_${form}`).toLowerCase();
    tables.push(table);
    await createJobsTable(engine, db, table);
    const route = unique("stale");
    await insertJobs(db, table, 2);
    // Row 1 was in work when it was cancelled, then went back to its queue before any app read the request.
    for (const query of dialectFor(engine.engine).control.requestCancel(route, "1", new Date())) await db.executeQuery(query);
    const app = await serve(table, route);
    try {
      await until(() => app.events.length === 2, 10_000, "both rows to finish");
      expect([...app.starts].sort((a, b) => a.id.localeCompare(b.id))).toEqual([
        { id: "1", aborted: true },
        { id: "2", aborted: false },
      ]);
      expect([...app.events].sort()).toEqual(["cancelled 1", "succeeded 2"]);
      await until(async () => (await requestsOf(route)).length === 0, 5000, "the served request to be cleared");
      await until(async () => (await readJobs(db, table)).length === 0, 5000, "both rows to be gone");
    } finally {
      await app.stop();
    }
  });
});
