/**
 * Fan-out and fan-in on every engine and form: `each` publishes one child per item of a result, and the
 * step after it waits for every child and reads their results in item order. The race: the last two
 * children of a run are acked at the same moment, on two connections (two brokers, each with its own
 * pool, where the engine has sessions of its own; on SQLite's advisory form, whose keys live in one
 * broker, two workers of one broker), 30 runs in a row: the fan-in step is published exactly once per run.
 */
import { payloadOf, workflow } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createTables, decoded, rowsOf, stepTable } from "./support.js";

const RUNS = 30;

describe.each(matrix)("fan-out and fan-in on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test(`the last two children acked at once release the fan-in step exactly once (${RUNS} runs)`, { timeout: 120_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wff").toLowerCase();
    const Splits = stepTable<{ run: number }, number[]>(`${prefix}_split`, form);
    const Parts = stepTable<{ run: number; item: number; index: number }, number>(`${prefix}_part`, form);
    const Sums = stepTable<{ run: number; parts: readonly (number | null)[] }, number>(`${prefix}_sum`, form);
    await createTables(db, [Splits, Parts, Sums], closers);
    const FanIn = workflow("fan_in", payloadOf<{ run: number }>())
      .step("split", Splits, (input) => ({ run: input.run }))
      .each("part", Parts, { over: "split" }, (input, item, _results, index) => ({ run: input.run, item, index }))
      .step("sum", Sums, { after: ["part"] }, (input, { part }) => ({ run: input.run, parts: part }));
    const brokerOf = () =>
      SqlBroker.fromUrl(url, { pool: { max: 8 } })
        .route(Splits, "split")
        .route(Parts, "part")
        .route(Sums, "sum")
        .workflow(FanIn);
    const twoBrokers = !(engine.engine === "sqlite" && form === "advisory");
    const first = brokerOf();
    const brokers = twoBrokers ? [first, brokerOf()] : [first];
    for (const b of brokers) closers.push(() => b.close());

    // Both children of a run wait here until both are in a handler, then ack together.
    let inHandlers = 0;
    let both: () => void = () => {};
    let bothIn = new Promise<void>((resolve) => {
      both = resolve;
    });
    const sums: Array<{ run: number; parts: readonly (number | null)[] }> = [];
    const apps = [];
    for (const [i, broker] of brokers.entries()) {
      const app = new App({ name: `wf-fan-${i}`, version: "0", logger: silentLogger }).withBroker(broker, (b) => {
        const withParts = b.include(
          subscriber(InboxQueue.of(Parts, "part").pollInterval(10).workers(2), async (job, ctx) => {
            if (++inHandlers === 2) both();
            await Promise.race([bothIn, new Promise((_, reject) => setTimeout(() => reject(new Error("the other child never started")), 10_000))]);
            return ctx.ack(job.item * 2);
          }),
        );
        if (i > 0) return withParts;
        return withParts.include(subscriber(InboxQueue.of(Splits, "split").pollInterval(10), async (job, ctx) => ctx.ack([job.run, job.run + 1]))).include(
          subscriber(InboxQueue.of(Sums, "sum").pollInterval(10), async (job, ctx) => {
            sums.push(job);
            return ctx.ack((job.parts[0] ?? 0) + (job.parts[1] ?? 0));
          }),
        );
      });
      apps.push(await app.start());
    }
    for (const app of apps) closers.push(() => app.stop());

    for (let run = 1; run <= RUNS; run++) {
      inHandlers = 0;
      bothIn = new Promise<void>((resolve) => {
        both = resolve;
      });
      const started = await first.startWorkflow(FanIn, { run });
      const results = await started.finished({ timeoutMs: 20_000, pollMs: 10 });
      expect(results).toEqual({ split: [run, run + 1], part: [run * 2, (run + 1) * 2], sum: run * 4 + 2 });
    }
    // Exactly one fan-in job and one fan-in delivery per run, each with the children's results in item order.
    expect(sums).toEqual(Array.from({ length: RUNS }, (_, i) => ({ run: i + 1, parts: [(i + 1) * 2, (i + 2) * 2] })));
    const rows = await rowsOf(db, Sums.table);
    expect(rows.map((r) => (decoded(r.payload) as { run: number }).run)).toEqual(Array.from({ length: RUNS }, (_, i) => i + 1));
    expect((await rowsOf(db, Parts.table)).length).toBe(2 * RUNS);
  });

  test("an empty fan-out finishes at once, and the fan-in step gets an empty list", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfe").toLowerCase();
    const Splits = stepTable<{ n: number }, string[]>(`${prefix}_split`, form);
    const Parts = stepTable<{ s: string }, string>(`${prefix}_part`, form);
    const Sums = stepTable<{ count: number }, number>(`${prefix}_sum`, form);
    await createTables(db, [Splits, Parts, Sums], closers);
    const Empty = workflow("fan_empty", payloadOf<{ n: number }>())
      .step("split", Splits, (input) => ({ n: input.n }))
      .each("part", Parts, { over: "split" }, (_, item) => ({ s: item }))
      .step("sum", Sums, { after: ["part"] }, (_, { part }) => ({ count: part.length }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Splits, "split")
      .route(Parts, "part")
      .route(Sums, "sum")
      .workflow(Empty);
    closers.push(() => broker.close());
    const app = await new App({ name: "wf-empty", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(subscriber(InboxQueue.of(Splits, "split").pollInterval(10), async (_job, ctx) => ctx.ack([])))
          .include(subscriber(InboxQueue.of(Parts, "part").pollInterval(10), async (job, ctx) => ctx.ack(job.s)))
          .include(subscriber(InboxQueue.of(Sums, "sum").pollInterval(10), async (job, ctx) => ctx.ack(job.count))),
      )
      .start();
    closers.push(() => app.stop());
    const run = await broker.startWorkflow(Empty, { n: 1 });
    await expect(run.finished({ timeoutMs: 20_000, pollMs: 10 })).resolves.toEqual({ split: [], part: [], sum: 0 });
    expect(await rowsOf(db, Parts.table)).toEqual([]);
    const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM sqlinbox_workflows WHERE workflow_id = ${run.id}`.execute(db);
    expect(Number(rows[0]?.n)).toBe(4);
  });
});
