import { describe, expect, test } from "vitest";
import { App, HandlerOutcome, InboxQueue, SqlBroker, subscriber } from "../src/index.js";
import { MemoryLogger, type LogRecord } from "../src/testing/index.js";
import { createJobsTable, insertJobs, jobsSpecOf, until } from "./support/claim-forms.js";
import { createFlowTable, flowSpecOf } from "./support/flow-tables.js";
import { engineNamed, engines, unique } from "./support/engines.js";
import { deferred, useEngineConnection } from "./support/fixtures.js";
import { sleep } from "./support/sleep.js";

const errText = (r: LogRecord): string => `${r.message} ${JSON.stringify(r.fields)}`;
const failures = (records: readonly LogRecord[]) => records.filter((r) => r.level === "warn" || r.level === "error");

describe.each(engines)("calm logs on $name", (engine) => {
  let url = "";
  let db: Parameters<Parameters<typeof useEngineConnection>[1]>[0]["db"];
  useEngineConnection(engine, (c) => ({ url, db } = c));

  test("a table dropped under a running app at pollInterval(100): one line in 10 s, a Schema error naming the table, where more than 10 claims failed; a line says when it stops", async () => {
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
      expect(during.length, during.map(errText).join("\n")).toBe(1);
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
      expect(err.message).toMatch(
        /^Schema: a table does not exist \(.+\): create it or restore it \(a queue table: createInboxTable\(db, spec\) at startup, or the statements sqlinbox ddl prints\); nothing was written \(subscription "jobs", table "[^"]+", id 1\)$/,
      );
      expect(err.message).toContain(`table "${table}"`);
      expect(err.message).not.toContain("SessionLost");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
  }, 60_000);
});

describe("calm startup logs", () => {
  test("an app on a database without the control table says so at debug level only: nothing at info or above mentions it", async () => {
    const engine = engineNamed("sqlite");
    const url = engine.url(); // a fresh file: no control table
    const db = await engine.connect(url);
    const table = unique("rt_calm_start");
    try {
      await createJobsTable(engine, db, table);
      const logger = new MemoryLogger();
      const spec = jobsSpecOf(table, "lease");
      const sub = subscriber(InboxQueue.of(spec, "jobs"), async () => HandlerOutcome.ack());
      const app = await new App({ name: "calm-start", version: "0", logger }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) => b.include(sub)).start();
      await app.stop();
      const control = logger.records.filter((r) => r.message.includes("control table"));
      expect(control.map((r) => r.level)).toEqual(["debug"]);
    } finally {
      await db.destroy();
    }
  });
});

describe.each(engines.filter((e) => e.engine !== "sqlite"))("calm cap logs on $name", (engine) => {
  let url = "";
  let db: Parameters<Parameters<typeof useEngineConnection>[1]>[0]["db"];
  useEngineConnection(engine, (c) => ({ url, db } = c));

  test("under maxInWork, rows claimed past the cap and given back are logged at debug, never at info", async () => {
    const table = unique(`rt_calm_cap_${engine.name}`);
    await createFlowTable(db, table);
    await insertJobs(db, table, 60);
    const spec = flowSpecOf(table, "lease");
    const logs = [new MemoryLogger(), new MemoryLogger()];
    let done = 0;
    // Two apps racing for one cap of 2 with 4 workers each: a claim often takes rows the other app's claim already
    // counted. (On SQLite, whose writes take turns, that race is rare: a run may see none, so it runs on the servers.)
    const apps = await Promise.all(
      logs.map((logger, i) => {
        const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).workers(4).maxInWork(2).pollInterval(20), async () => {
          await sleep(15);
          done++;
          return HandlerOutcome.ack();
        });
        return new App({ name: `cap-${i}`, version: "0", logger }).withBroker(SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs"), (b) => b.include(sub)).start();
      }),
    );
    try {
      await until(() => done >= 60, 60_000, "every row handled");
    } finally {
      for (const app of apps) await app.stop();
    }
    const records = logs.flatMap((l) => l.records);
    const givenBack = records.filter((r) => r.message.includes("given back"));
    console.log(`${engine.name}: ${givenBack.length} give-backs under the cap (${givenBack.map((r) => r.level).join(", ")})`);
    expect(givenBack.filter((r) => r.level !== "debug").map(errText)).toEqual([]);
    expect(givenBack.length).toBeGreaterThan(0); // the race happened: the test saw what it checks
  });
});
