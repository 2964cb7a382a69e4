/**
 * A step's publish options on every engine: a first step published at the start with one value of options (a
 * delay, a priority, a data column, headers), a later step with options built from the run's input and the result
 * it reads, released by the first step's ack; a fan-out's children each with their own. Options the step's table
 * cannot hold fail the run, naming the step, as a payload builder that throws does.
 */
import { column, InboxSpec, payloadOf, resultOf, workflow } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { engines, unique } from "../support/engines.js";
import { countOf, createTables, decoded, stepTable } from "./support.js";

/** A step table with every column a publish option writes: run-at, priority, headers, a data column. */
function optionTable<P, R>(table: string) {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .retryAfter(column("retry_after"))
    .priority(column("priority"))
    .headers(column("headers"))
    .processedAt(column("processed_at"))
    .result(column("result"), resultOf<R>())
    .payload(column("payload"), payloadOf<P>())
    .data(column("customer").type("text"));
}

interface Row {
  id: unknown;
  payload: unknown;
  retry_after: unknown;
  priority: unknown;
  headers: unknown;
  customer: unknown;
}

describe.each(engines)("a step's publish options on $name", (engine) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("a value at the start, a function of the input and a result at a release, one per child; options the table cannot hold fail the run", { timeout: 60_000 }, async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wpo").toLowerCase();
    const Firsts = optionTable<{ customer: string }, string[]>(`${prefix}_first`);
    const Seconds = optionTable<{ tag: string }, number>(`${prefix}_second`);
    const Plain = stepTable<{ n: number }, number>(`${prefix}_plain`, "lease");
    await createTables(db, [Firsts, Seconds, Plain], closers);
    const Flow = workflow(`${prefix}_flow`, payloadOf<{ customer: string }>())
      .step("first", Firsts, { publish: { delay: 0, priority: 5, columns: { customer: "acme" }, headers: { traceparent: "00-a-01" } } }, (input) => input)
      .step(
        "second",
        Seconds,
        { after: ["first"], publish: (input, { first }) => ({ delay: 3_600_000, priority: first?.length ?? 0, columns: { customer: input.customer } }) },
        (_, { first }) => ({ tag: (first ?? []).join("+") }),
      )
      .each("part", Seconds, { over: "first", route: "part", publish: (_, tag, __, index) => ({ priority: 100 + index, headers: { tag } }) }, (_, tag) => ({ tag }));
    const Refused = workflow(`${prefix}_refused`, payloadOf<{ n: number }>()).step("only", Plain, { publish: { priority: 1 } }, (input) => input);
    const Late = workflow(`${prefix}_late`, payloadOf<{ customer: string }>())
      .step("a", Firsts, { route: "first" }, (input) => input)
      .step("b", Plain, { after: ["a"], route: "only", publish: () => ({ priority: 1 }) }, () => ({ n: 1 }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Firsts, "first")
      .route(Seconds, "second")
      .route(Seconds, "part")
      .route(Plain, "only")
      .workflow(Flow)
      .workflow(Refused)
      .workflow(Late);
    closers.push(() => broker.close());
    const rows = async (table: string) =>
      (await sql<Row>`select id, payload, retry_after, priority, headers, customer from ${sql.id(table)} order by id`.execute(db)).rows.map((r) => ({
        payload: decoded(r.payload),
        priority: Number(r.priority),
        customer: r.customer,
        headers: r.headers === null ? null : typeof r.headers === "string" ? JSON.parse(r.headers) : r.headers,
        runAt: r.retry_after === null ? null : new Date(engine.name === "sqlite" ? String(r.retry_after) : (r.retry_after as Date | string)).getTime(),
      }));

    // Options the table cannot hold at the start: nothing is written, the start throws naming the step.
    await expect(broker.startWorkflow(Refused, { n: 1 })).rejects.toThrow(
      `workflow "${prefix}_refused" cannot start, nothing was written: the publish options of step "only" have a priority, and ${Plain.table} has no priority column`,
    );
    const started = Date.now();
    const run = await broker.startWorkflow(Flow, { customer: "globex" });
    const late = await broker.startWorkflow(Late, { customer: "initech" });
    const [first, lateFirst] = await rows(Firsts.table);
    expect(lateFirst).toMatchObject({ payload: { customer: "initech" }, priority: 0, customer: null, headers: null, runAt: null });
    expect(first).toMatchObject({ payload: { customer: "globex" }, priority: 5, customer: "acme", headers: { traceparent: "00-a-01" } });

    const app = await new App({ name: "wf-options", version: "0", logger: silentLogger })
      .withBroker(broker, (b) => b.include(subscriber(InboxQueue.of(Firsts, "first").pollInterval(20), async (_job, ctx) => ctx.ack(["x", "y"]))))
      .start();
    closers.push(() => app.stop());
    for (const deadline = Date.now() + 20_000; (await rows(Seconds.table)).length < 3; ) {
      if (Date.now() > deadline) throw new Error("the second step and the fan-out's children were not published");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const published = await rows(Seconds.table);
    const second = published.find((r) => (r.payload as { tag: string }).tag === "x+y");
    expect(second).toMatchObject({ priority: 2, customer: "globex", headers: null });
    // An hour after its release, on the database's clock (this machine's, within a minute).
    expect(Math.abs((second?.runAt ?? 0) - started - 3_600_000)).toBeLessThan(60_000);
    const children = published.filter((r) => r !== second).map((r) => [r.payload, r.priority, r.headers]);
    expect(children).toEqual([
      [{ tag: "x" }, 100, { tag: "x" }],
      [{ tag: "y" }, 101, { tag: "y" }],
    ]);
    expect((await run.state()).state).toBe("running");

    // At a release, options the table cannot hold fail the run, naming the step; nothing is published.
    await expect(late.finished({ timeoutMs: 20_000, pollMs: 50 })).rejects.toMatchObject({
      reason: "failed",
      failure: { step: "b", reason: `the publish options of step "b" have a priority, and ${Plain.table} has no priority column` },
    });
    expect(await countOf(db, Plain.table)).toBe(0);
  });
});
