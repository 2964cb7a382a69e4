/**
 * Delays served on time, on every engine × form: a row this process delayed (a handler's
 * `retryAfter`, a publish's `delay`) wakes its subscription when it comes due, from a timer to
 * the soonest known due time, not at the next poll (10 s here). On the paused clock of `TestApp`
 * the retry comes at exactly its delay.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, createInboxTable, HandlerOutcome, InboxQueue, keys, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { TestApp } from "../../src/testing/index.js";
import { matrix, until } from "../support/claim-forms.js";
import { engines, unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";

interface Job {
  readonly n: number;
}

/** The poll interval: far beyond every delay here, so only the due wake can start a delayed row in time. */
const POLL_MS = 10_000;
const DELAY_MS = 500;
/** Well before the poll, with room for a loaded machine. */
const LATE_AT_MOST_MS = 2500;

/** A table that stores a delay: the retryAfter column (row lock, advisory keyed by `customer_id`), or the lease column. */
function dueSpec(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    payload: field.payload<Job>(),
    customerId: field.data("customer_id").holds<number>().type("bigint"),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
  if (form === "advisory") return defineInbox({ table, columns: { ...columns, retryAfter: field.retryAfter("retry_after") }, advisoryLock: "customer-{customer_id}" });
  return defineInbox({ table, columns: { ...columns, retryAfter: field.retryAfter("retry_after") } });
}
type DueSpec = ReturnType<typeof dueSpec>;

describe.each(matrix)("delays on time on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  /** A fresh table and an app consuming it with `handler`, polling every 10 s; `run` gets the routed broker. */
  async function withApp(handler: (job: Job, attempt: number) => HandlerOutcome, run: (broker: SqlBroker<{ jobs: DueSpec }>) => Promise<void>): Promise<void> {
    const table = unique(`due_${form}`);
    const spec = dueSpec(table, form);
    await createInboxTable(db, spec);
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "jobs");
    const queue = InboxQueue.of(spec, "jobs").lease(5000).pollInterval(POLL_MS).workers(2);
    const app = await new App({ name: "due", version: "0", logger: silentLogger })
      .withBroker(broker, (b) => b.include(subscriber(queue, async (job, ctx) => handler(job, ctx.get(keys.attempt)))))
      .start();
    try {
      await run(broker);
    } finally {
      await app.stop();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db);
    }
  }

  test(`a ${DELAY_MS} ms retryAfter starts when it comes due, well before the ${POLL_MS / 1000} s poll`, async () => {
    const starts: number[] = [];
    await withApp(
      (_job, attempt) => {
        starts.push(Date.now());
        return attempt === 1 ? HandlerOutcome.retryAfter(DELAY_MS) : HandlerOutcome.ack();
      },
      async (broker) => {
        await broker.publish("jobs", { n: 1 }, { columns: { customerId: 1 } });
        await until(() => starts.length === 2, POLL_MS - 1000, "the retried row before the poll");
      },
    );
    const [first, second] = starts as [number, number];
    expect(second - first).toBeGreaterThanOrEqual(DELAY_MS);
    expect(second - first).toBeLessThan(DELAY_MS + LATE_AT_MOST_MS);
  });

  test(`a publish with a ${DELAY_MS} ms delay, and one with a runAt, start when they come due`, async () => {
    const starts = new Map<number, number>();
    await withApp(
      (job) => {
        starts.set(job.n, Date.now());
        return HandlerOutcome.ack();
      },
      async (broker) => {
        const published = Date.now();
        await broker.publish("jobs", { n: 1 }, { delay: DELAY_MS, columns: { customerId: 1 } });
        await broker.publish("jobs", { n: 2 }, { runAt: new Date(published + 2 * DELAY_MS), columns: { customerId: 2 } });
        await until(() => starts.size === 2, POLL_MS - 1000, "both delayed rows before the poll");
        const at = (n: number): number => (starts.get(n) ?? 0) - published;
        expect(at(1)).toBeGreaterThanOrEqual(DELAY_MS);
        expect(at(1)).toBeLessThan(DELAY_MS + LATE_AT_MOST_MS);
        expect(at(2)).toBeGreaterThanOrEqual(2 * DELAY_MS);
        expect(at(2)).toBeLessThan(2 * DELAY_MS + LATE_AT_MOST_MS);
      },
    );
  });

  test(`a { via: trx } publish with a ${DELAY_MS} ms delay starts when it comes due after the commit, one without it at once; a rolled-back one never`, async () => {
    const starts = new Map<number, number>();
    await withApp(
      (job) => {
        starts.set(job.n, Date.now());
        return HandlerOutcome.ack();
      },
      async (broker) => {
        await db
          .transaction()
          .execute(async (trx) => {
            await broker.publish("jobs", { n: -1 }, { via: trx, delay: DELAY_MS, columns: { customerId: 1 } });
            throw new Error("roll back");
          })
          .catch(() => {});
        const published = Date.now();
        let committed = 0;
        await db.transaction().execute(async (trx) => {
          // A row due now and a delayed one in the same transaction: each keeps its own wake.
          await broker.publish("jobs", { n: 2 }, { via: trx, columns: { customerId: 2 } });
          await broker.publish("jobs", { n: 1 }, { via: trx, delay: DELAY_MS, columns: { customerId: 1 } });
        });
        committed = Date.now();
        await until(() => starts.has(1) && starts.has(2), POLL_MS - 1000, "both rows before the poll");
        expect((starts.get(2) ?? 0) - committed).toBeLessThan(DELAY_MS - 100);
        expect((starts.get(1) ?? 0) - published).toBeGreaterThanOrEqual(DELAY_MS);
        expect((starts.get(1) ?? 0) - published).toBeLessThan(DELAY_MS + LATE_AT_MOST_MS);
        expect([...starts.keys()].sort()).toEqual([1, 2]);
      },
    );
  });
});

describe.each(engines.filter((e) => e.engine === "sqlite"))("delays on time on the paused clock ($name)", (engine) => {
  test("lease: the retry starts at its delay exactly, not at the poll", async () => {
    const form = "lease";
    const url = engine.url();
    const db = await engine.connect(url);
    const table = unique(`due_paused_${form}`);
    const spec = dueSpec(table, form);
    await createInboxTable(db, spec);
    const sub = subscriber(InboxQueue.of(spec, "jobs").lease(5000).pollInterval(POLL_MS), async (_job, ctx) =>
      ctx.get(keys.attempt) === 1 ? HandlerOutcome.retryAfter(DELAY_MS) : HandlerOutcome.ack(),
    );
    const app = new App({ name: "due", version: "0", logger: silentLogger }).withBroker(SqlBroker.fromUrl(url).route(spec, "jobs"), (b) => b.include(sub));
    const t = await TestApp.start(app);
    try {
      await t.publish("jobs", { n: 1 });
      expect(t.calls(sub).map((c) => c.attempt)).toEqual([1]);
      await t.advance(DELAY_MS - 1);
      expect(t.calls(sub)).toHaveLength(1);
      await t.advance(1);
      expect(t.calls(sub).map((c) => [c.attempt, c.outcome?.kind])).toEqual([
        [1, "retryAfter"],
        [2, "ack"],
      ]);
    } finally {
      await t.stop();
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db);
      await db.destroy();
      engine.cleanup();
    }
  });
});
