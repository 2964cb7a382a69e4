/**
 * Retries in the forms that hold a row by a lock: `retry()` commits the counted attempt and
 * releases the row at once. `retryAfter(ms)` on a table without a retryAfter column does not
 * compile; from an untyped (JavaScript) handler it is logged as a `Declaration` error naming the
 * route, the table and the column to add, and the row is released at once too (nothing is held
 * for the delay: the worker takes the next row meanwhile) while this process leaves it out of its
 * claims for `ms`.
 */
import { describe, expect, test } from "vitest";
import { useEngineConnection } from "../../support/fixtures.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { HandlerOutcome, type LogFields, type Logger } from "../../../src/index.js";
import { engines, unique } from "../../support/engines.js";
import { createJobsTable, insertJobs, readJobs, until, jobsSpecOf, type Seen } from "../../support/claim-forms.js";
import { App, InboxQueue, SqlBroker, keys, silentLogger, subscriber } from "../../../src/index.js";

/** What an untyped handler returns: the compiler's rule does not reach it. */
const untyped = (outcome: HandlerOutcome): never => outcome as never;

/** A logger that keeps the errors it is given: their message and the SqlInboxError's code and message. */
function errorLog(): { logger: Logger; errors: Array<{ message: string; code: unknown; error: string }> } {
  const errors: Array<{ message: string; code: unknown; error: string }> = [];
  const err = (fields: LogFields) => (fields["err"] ?? {}) as { code?: unknown; message?: string };
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (fields, message) => void errors.push({ message, code: err(fields).code, error: String(err(fields).message) }),
  };
  return { logger, errors };
}

const cases = engines.flatMap((engine) => (engine.engine === "sqlite" ? (["advisory"] as const) : (["rowLock", "advisory"] as const)).map((form) => ({ engine, form })));

describe.each(cases)("retries on $engine.name × $form", ({ engine, form }) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  test.each([
    { outcome: "retry", delay: 0 },
    { outcome: "retryAfter", delay: 400 },
  ] as const)("$outcome: the next delivery reads attempt 2, after $delay ms", async ({ outcome, delay }) => {
    const table = unique(`retry_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const seen: Seen[] = [];
    const sub = subscriber(InboxQueue.of(spec, "jobs").pollInterval(50), async (job, ctx) => {
      seen.push({ id: Number(ctx.id), n: job.n, attempt: ctx.get(keys.attempt), at: Date.now() });
      if (seen.length > 1) return HandlerOutcome.ack();
      return outcome === "retry" ? HandlerOutcome.retry() : untyped(HandlerOutcome.retryAfter(delay));
    });
    const app = await new App({ name: "t", version: "0", logger: silentLogger })
      .withBroker(SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs"), (b) => b.include(sub))
      .start();
    try {
      await insertJobs(db, table, 1);
      await until(async () => seen.length === 2 && (await readJobs(db, table)).length === 0, 10_000, "the retried row to be acked");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
    const gap = (seen[1] as Seen).at - (seen[0] as Seen).at;
    expect(gap).toBeGreaterThanOrEqual(delay);
    expect(gap).toBeLessThan(delay + 1500);
  });

  test("an untyped retryAfter is logged with the route, the table and the column to add; the row is not held: the worker takes the next row meanwhile", async () => {
    const table = unique(`delay_${form}`);
    await createJobsTable(engine, db, table);
    const spec = jobsSpecOf(table, form);
    const delay = 800;
    const seen: Seen[] = [];
    const { logger, errors } = errorLog();
    const sub = subscriber(InboxQueue.of(spec, "jobs").workers(1).pollInterval(50), async (job, ctx) => {
      const attempt = ctx.get(keys.attempt);
      seen.push({ id: Number(ctx.id), n: job.n, attempt, at: Date.now() });
      return job.n === 0 && attempt === 1 ? untyped(HandlerOutcome.retryAfter(delay)) : HandlerOutcome.ack();
    });
    const app = await new App({ name: "t", version: "0", logger }).withBroker(SqlBroker.fromUrl(url, { pool: { max: 3 } }).route(spec, "jobs"), (b) => b.include(sub)).start();
    try {
      await insertJobs(db, table, 2);
      await until(async () => seen.length === 3 && (await readJobs(db, table)).length === 0, 10_000, "both rows acked");
    } finally {
      await app.stop();
      await engine.dropTable(db, table);
    }
    // Row 0 delayed; its one worker took row 1 during the delay; row 0 came back after it.
    expect(seen.map((s) => [s.n, s.attempt])).toEqual([
      [0, 1],
      [1, 1],
      [0, 2],
    ]);
    const [first, second, third] = seen as [Seen, Seen, Seen];
    expect(second.at - first.at).toBeLessThan(delay);
    expect(third.at - first.at).toBeGreaterThanOrEqual(delay);
    const formName = form === "rowLock" ? "a row-lock" : "an advisory";
    expect(errors).toEqual([
      {
        message: "retryAfter on a table with no retryAfter column: row released and parked in this process",
        code: "Declaration",
        error: expect.stringContaining(
          `Declaration: the handler returned retryAfter(${delay}) on ${formName} table with nowhere to store a time: add a retryAfter column (field.retryAfter(), or .retryAfter(column("retry_after")))`,
        ),
      },
    ]);
    expect(errors[0]?.error).toContain(`(subscription "jobs", table "${table}", id ${first.id})`);
  });

  test("an untyped retryAfter from a batch handler or an onError policy is logged the same way, naming its source", async () => {
    const batchTable = unique(`delay_batch_${form}`);
    const policyTable = unique(`delay_policy_${form}`);
    await createJobsTable(engine, db, batchTable);
    await createJobsTable(engine, db, policyTable);
    const batchSpec = jobsSpecOf(batchTable, form);
    const policySpec = jobsSpecOf(policyTable, form);
    const seen: Array<{ table: string; n: number; attempt: number }> = [];
    const { logger, errors } = errorLog();
    const batch = subscriber.batch(InboxQueue.of(batchSpec, "batched").batch(2).pollInterval(50), async (jobs, ctx) =>
      jobs.map((job, i) => {
        const attempt = ctx.rows[i]?.get(keys.attempt) ?? 0;
        seen.push({ table: batchTable, n: job.n, attempt });
        return job.n === 0 && attempt === 1 ? untyped(HandlerOutcome.retryAfter(300)) : HandlerOutcome.ack();
      }),
    );
    const policy = (() => untyped(HandlerOutcome.retryAfter(300))) as never;
    const throwing = subscriber(InboxQueue.of(policySpec, "failing").pollInterval(50).onError(policy), async (job, ctx) => {
      seen.push({ table: policyTable, n: job.n, attempt: ctx.get(keys.attempt) });
      if (ctx.get(keys.attempt) === 1) throw new Error("not yet");
    });
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } });
    const app = await new App({ name: "t", version: "0", logger })
      .withBroker(broker.route(batchSpec, "batched").route(policySpec, "failing"), (b) => b.include(batch).include(throwing))
      .start();
    try {
      await insertJobs(db, batchTable, 2);
      await insertJobs(db, policyTable, 1);
      await until(async () => (await readJobs(db, batchTable)).length === 0 && (await readJobs(db, policyTable)).length === 0, 10_000, "every row acked");
    } finally {
      await app.stop();
      await engine.dropTable(db, batchTable);
      await engine.dropTable(db, policyTable);
    }
    // Each delayed row came back once, its attempt counted: delayed, not lost and not held.
    expect(seen.filter((s) => s.n === 0).map((s) => [s.table, s.attempt])).toEqual(
      expect.arrayContaining([
        [batchTable, 1],
        [batchTable, 2],
        [policyTable, 1],
        [policyTable, 2],
      ]),
    );
    const declarations = errors.filter((e) => e.code === "Declaration").map((e) => e.error);
    expect(declarations).toHaveLength(2);
    expect(declarations).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^Declaration: the batch handler returned retryAfter\\(300\\) on .* \\(subscription "batched", table "${batchTable}", id \\d+\\)$`)),
        expect.stringMatching(new RegExp(`^Declaration: the onError policy returned retryAfter\\(300\\) on .* \\(subscription "failing", table "${policyTable}", id \\d+\\)$`)),
      ]),
    );
  });
});
