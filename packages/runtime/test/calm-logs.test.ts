import { describe, expect, test } from "vitest";
import { App, HandlerOutcome, InboxQueue, SqlBroker, subscriber } from "../src/index.js";
import { MemoryLogger, type LogRecord } from "../src/testing/index.js";
import { createJobsTable, insertJobs, jobsSpecOf } from "./claim-forms.js";
import { engines, unique } from "./engines.js";
import { deferred, useEngineConnection } from "./fixtures.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const errText = (r: LogRecord): string => `${r.message} ${JSON.stringify(r.fields)}`;
const failures = (records: readonly LogRecord[]) => records.filter((r) => r.level === "warn" || r.level === "error");

describe.each(engines)("calm logs on $name", (engine) => {
  let url = "";
  let db: Parameters<Parameters<typeof useEngineConnection>[1]>[0]["db"];
  useEngineConnection(engine, (c) => ({ url, db } = c));

  test("a table dropped under a running app at pollInterval(100): at most 5 lines in 10 s, the first a Schema error naming the table; a line says when it stops", async () => {
    const table = unique(`rt_calm_${engine.name}`);
    await createJobsTable(engine, db, table);
    const logger = new MemoryLogger();
    const spec = jobsSpecOf(table, "lease");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } });
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(100), async () => HandlerOutcome.ack());
    const app = await new App({ name: "calm", version: "0", logger }).withBroker(broker.route(spec, "jobs"), (b) => b.include(sub)).start();
    try {
      await sleep(500);
      const before = logger.records.length;
      await engine.dropTable(db, table);
      await sleep(10_000);
      const during = logger.records.slice(before);
      expect(during.length, during.map(errText).join("\n")).toBeLessThanOrEqual(5);
      const first = failures(during)[0]!;
      expect(first.fields).toMatchObject({ subscription: "jobs", table, err: { code: "Schema" } });
      expect((first.fields.err as { message: string }).message).toMatch(/^Schema: a table does not exist \(/);
      expect((first.fields.err as { message: string }).message).toContain(table);

      // The table comes back: the failure stops, and one line says so.
      await createJobsTable(engine, db, table);
      await expect.poll(() => logger.find("no longer failing").length, { timeout: 10_000, interval: 200 }).toBe(1);
      const stopped = logger.find("no longer failing")[0]!;
      expect(stopped.level).toBe("info");
      expect(stopped.message).toMatch(/^no longer failing: claim failed; trying again after the poll interval \(seen \d+ times over \d+ s; none for \d+ s\)$/);
      expect(stopped.fields.total as number).toBeGreaterThan(10);
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
  }, 60_000);

  test("an advisory ack on a table dropped under its delivery is a Schema error naming the table, not SessionLost", async () => {
    const table = unique(`rt_calm_adv_${engine.name}`);
    await createJobsTable(engine, db, table);
    await insertJobs(db, table, 1);
    const logger = new MemoryLogger();
    const spec = jobsSpecOf(table, "advisory");
    const broker = SqlBroker.fromUrl(url, { pool: { max: 4 } });
    const dropped = deferred();
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(100), async () => {
      await engine.dropTable(db, table);
      dropped.resolve();
      return HandlerOutcome.ack();
    });
    const app = await new App({ name: "calm", version: "0", logger }).withBroker(broker.route(spec, "jobs"), (b) => b.include(sub)).start();
    try {
      await dropped.promise;
      await expect.poll(() => logger.find("settlement failed").length, { timeout: 10_000, interval: 100 }).toBe(1);
      const failed = logger.find("settlement failed")[0]!;
      const err = failed.fields.err as { code: string; message: string };
      expect(err.code).toBe("Schema");
      expect(err.message).toMatch(/^Schema: a table does not exist \(.+\): create it or restore it; nothing was written \(subscription "jobs", table "[^"]+", id 1\)$/);
      expect(err.message).toContain(`table "${table}"`);
      expect(err.message).not.toContain("SessionLost");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
  }, 60_000);
});
