/**
 * Steps run by a transactional handler and by a batch handler, on every engine and form: the release is
 * written in the transaction that holds the handler's writes (its own, a savepoint of the claim's, or one
 * on the key's session), and in the batch's shared transaction on the row-lock form, where one transaction
 * acks every child of a fan-out and releases the step after them once.
 */
import { payloadOf, workflow } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { countOf, createTables, stepTable } from "./support.js";

describe.each(matrix)("workflow steps in transactional and batch handlers on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("a transactional step's ack releases the next step beside its writes; a batch acks its children and releases the step after them once", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfh").toLowerCase();
    const Splits = stepTable<{ n: number }, number[]>(`${prefix}_split`, form);
    const Parts = stepTable<{ item: number }, number>(`${prefix}_part`, form);
    const Sums = stepTable<{ parts: readonly (number | null)[] }, number>(`${prefix}_sum`, form);
    await createTables(db, [Splits, Parts, Sums], closers);
    const audit = `${prefix}_audit`;
    await sql`CREATE TABLE ${sql.id(audit)} (n INTEGER NOT NULL)`.execute(db);
    closers.push(() => sql`DROP TABLE IF EXISTS ${sql.id(audit)}`.execute(db));
    const Flow = workflow("handlers", payloadOf<{ n: number }>())
      .step("split", Splits, (input) => input)
      .each("part", Parts, { over: "split" }, (_, item) => ({ item }))
      .step("sum", Sums, { after: ["part"] }, (_, { part }) => ({ parts: part }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Splits, "split")
      .route(Parts, "part")
      .route(Sums, "sum")
      .workflow(Flow);
    closers.push(() => broker.close());
    const batches: number[] = [];
    const app = await new App({ name: "wf-handlers", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(
            subscriber(InboxQueue.of(Splits, "split").pollInterval(20).transactional(), async (job, ctx) => {
              await sql`INSERT INTO ${sql.id(audit)} (n) VALUES (${job.n})`.execute(ctx.tx);
              return ctx.ack([1, 2, 3]);
            }),
          )
          .include(
            subscriber.batch(InboxQueue.of(Parts, "part").batch(3).pollInterval(200), async (jobs, ctx) => {
              batches.push(jobs.length);
              return jobs.map((job, i) => ctx.rows[i]?.ack(job.item * 10));
            }),
          )
          .include(subscriber(InboxQueue.of(Sums, "sum").pollInterval(20), async (job, ctx) => ctx.ack(job.parts.reduce<number>((a, b) => a + (b ?? 0), 0)))),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Flow, { n: 7 });
    await expect(run.finished({ timeoutMs: 20_000, pollMs: 20 })).resolves.toEqual({ split: [1, 2, 3], part: [10, 20, 30], sum: 60 });
    expect(await countOf(db, audit)).toBe(1);
    expect(await countOf(db, Sums.table)).toBe(1);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(3);
  });
});
