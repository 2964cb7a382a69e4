/**
 * `maxInWork` and `rateLimit` where the compiler did not check (a number it could not see, an
 * untyped caller), what they declare, and a missing slot table at startup, on every engine.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expect, it, test } from "vitest";
import { App, HandlerOutcome, InboxQueue, SqlBroker, subscriber, type Logger } from "../../../src/index.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { formsOf, insertJobs, matrix, until } from "../../support/claim-forms.js";
import { engines, unique } from "../../support/engines.js";
import { createFlowTable, flowSpecOf } from "../../support/flow-tables.js";
import { createInboxTable } from "../../../src/index.js";
import { sql } from "kysely";

interface Job {
  readonly n: number;
}
const RowLock = InboxSpec.table("jobs", column("id")).payload(column("payload"), payloadOf<Job>());
const Leased = InboxSpec.table("jobs", column("id")).lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
const LeasedWithDelay = Leased.retryAfter(column("retry_after"));
const untyped = (n: unknown): number => n as number;
const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

describe("refused when the queue is declared", () => {
  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "3"])("maxInWork(%s)", (n) => {
    expect(() => InboxQueue.of(RowLock, "jobs").maxInWork(untyped(n))).toThrow(/^Declaration: maxInWork must be a whole number above 0, got /);
  });

  it("names the subscription and the table", () => {
    expect(() => InboxQueue.of(RowLock, "jobs").maxInWork(untyped(0))).toThrow(expect.objectContaining({ code: "Declaration", place: { subscription: "jobs", table: "jobs" } }));
  });

  it("maxInWork on a lease table without a retryAfter column", () => {
    const queue = InboxQueue.of(Leased, "jobs") as unknown as { maxInWork(n: number): unknown };
    expect(() => queue.maxInWork(5)).toThrow(/^Declaration: maxInWork on a lease table needs a retryAfter column/);
  });

  it.each([0, -1, 2.5, Number.NaN])("rateLimit's max %s", (max) => {
    expect(() => InboxQueue.of(RowLock, "jobs").rateLimit({ max: untyped(max), perMs: 1000 })).toThrow(/^Declaration: rateLimit's max must be a whole number above 0, got /);
  });

  it.each([0, -1000, Number.NaN, Number.POSITIVE_INFINITY])("rateLimit's perMs %s", (perMs) => {
    expect(() => InboxQueue.of(RowLock, "jobs").rateLimit({ max: 10, perMs: untyped(perMs) })).toThrow(/^Declaration: rateLimit's perMs must be a window above 0 ms, got /);
  });

  it("the options say what was declared", () => {
    expect(InboxQueue.of(LeasedWithDelay, "jobs").maxInWork(4).rateLimit({ max: 10, perMs: 1000 }).options).toMatchObject({ maxInWork: 4, rateLimit: { max: 10, perMs: 1000 } });
    expect(InboxQueue.of(RowLock, "jobs").options).not.toHaveProperty("maxInWork");
    expect(InboxQueue.of(RowLock, "jobs").options).not.toHaveProperty("rateLimit");
  });
});

describe.each(engines)("a missing slot table on $name", (engine) => {
  const forms = formsOf(engine);
  test.each(forms.map((form) => ({ form, limit: "rateLimit" })).concat(forms.includes("rowLock") ? [{ form: "rowLock", limit: "maxInWork" }] : []))(
    "$limit on a $form table fails the start with a Schema error naming sqlinbox_slots and how to create it",
    async ({ form, limit }) => {
      const url = engine.url();
      const db: AnyKysely = await engine.connect(url);
      const table = unique(`noslots_${form}`).toLowerCase();
      // A schema (MySQL/MariaDB: a database) of its own, where no slot table was ever made; SQLite: a fresh file.
      const scope = engine.engine === "sqlite" ? undefined : unique("noslots").toLowerCase();
      try {
        if (scope !== undefined) await sql.raw(`create ${engine.engine === "postgres" ? "schema" : "database"} ${scope}`).execute(db);
        const base = flowSpecOf(table, form as "rowLock");
        const spec = scope === undefined ? base : base.schema(scope);
        await createInboxTable(db, spec);
        let queue = InboxQueue.of(spec, "jobs");
        queue = limit === "rateLimit" ? queue.rateLimit({ max: 5, perMs: 1000 }) : queue.maxInWork(2);
        const app = new App({ name: "noslots", version: "0", logger: quiet }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) =>
          b.include(subscriber(queue, async () => HandlerOutcome.ack())),
        );
        await expect(app.start()).rejects.toThrow(
          expect.objectContaining({
            code: "Schema",
            message: expect.stringMatching(
              /^Schema: the table (\w+\.)?sqlinbox_slots does not exist .*: maxInWork and rateLimit count in it; create it with createInboxTable\(db, spec, undefined, \{ slotTable: true \}\)/,
            ),
          }),
        );
      } finally {
        if (scope !== undefined)
          await sql.raw(`drop ${engine.engine === "postgres" ? "schema" : "database"} if exists ${scope}${engine.engine === "postgres" ? " cascade" : ""}`).execute(db);
        else await engine.dropTable(db, table).catch(() => {});
        await db.destroy();
      }
    },
  );
});

describe.each(matrix)("a subscription over its rate limit on $engine.name × $form", ({ engine, form }) => {
  test("sleeps until the window frees a start, not the poll interval (a minute here)", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`window_${form}`).toLowerCase();
    const starts: number[] = [];
    let running: { stop(): Promise<unknown> } | undefined;
    try {
      await createFlowTable(db, table);
      await insertJobs(db, table, 4);
      const spec = flowSpecOf(table, form);
      const queue = InboxQueue.of(spec, "jobs").workers(4).pollInterval(60_000).rateLimit({ max: 2, perMs: 1500 });
      const app = new App({ name: "window", version: "0", logger: quiet }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) =>
        b.include(
          subscriber(queue, async () => {
            starts.push(Date.now());
            return HandlerOutcome.ack();
          }),
        ),
      );
      running = await app.start();
      await until(() => starts.length >= 4, 20_000, "four starts");
      const sorted = [...starts].sort((a, b) => a - b);
      const first = sorted[0] as number;
      // Two at once, two when the window frees them: about 1.5 s later, far sooner than the 60 s poll.
      expect((sorted[1] as number) - first).toBeLessThan(1000);
      expect((sorted[2] as number) - first).toBeGreaterThanOrEqual(1500);
      expect((sorted[3] as number) - first).toBeLessThan(10_000);
    } finally {
      await running?.stop();
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});

describe.each(matrix)("a subscription at its cap on $engine.name × $form", ({ engine, form }) => {
  test("claims again when one of its deliveries ends, not at its next poll (a minute here)", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    const table = unique(`atcap_${form}`).toLowerCase();
    let done = 0;
    let inWork = 0;
    let most = 0;
    let running: { stop(): Promise<unknown> } | undefined;
    try {
      await createFlowTable(db, table);
      await insertJobs(db, table, 12);
      const spec = flowSpecOf(table, form);
      const queue = InboxQueue.of(spec, "jobs").workers(4).pollInterval(60_000).maxInWork(2);
      const app = new App({ name: "atcap", version: "0", logger: quiet }).withBroker(SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs"), (b) =>
        b.include(
          subscriber(queue, async () => {
            most = Math.max(most, ++inWork);
            // Each row waits (a second at most) for a second one in work: the cap is reached, however slowly claims run.
            const until2 = Date.now() + 1000;
            while (inWork < 2 && Date.now() < until2) await new Promise((r) => setTimeout(r, 5));
            await new Promise((r) => setTimeout(r, 20));
            inWork--;
            done++;
            return HandlerOutcome.ack();
          }),
        ),
      );
      const started = Date.now();
      running = await app.start();
      await until(() => done >= 12, 30_000, "twelve rows handled");
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(most).toBe(2);
    } finally {
      await running?.stop();
      await engine.dropTable(db, table).catch(() => {});
      await db.destroy();
    }
  });
});
