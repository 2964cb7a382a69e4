/**
 * Resume after failure on every engine and form: a middle step dead-lettered into a table fails the
 * run and holds the step after it; moved back into its queue (as `sqlinbox retry` and the dashboard
 * do; a dead-letter table or a dead group), it runs again and is acked: the step is done, the run runs again, the step after it is
 * released once, and the run finishes with its typed results.
 */
import { column, InboxSpec, payloadOf, resultOf, workflow } from "@sqlinbox/core";
import { operatorFor, type DeadLetterPlace } from "@sqlinbox/kysely-dialects/operator";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { countOf, createTables, rowsOf, stepTable } from "./support.js";

describe.each(matrix)("resuming a failed run on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("a dead-lettered middle step moved back and acked resumes the run where it stopped", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfr").toLowerCase();
    const Charges = stepTable<{ orderId: string }, { cents: number }>(`${prefix}_charge`, form);
    const Ships = stepTable<{ cents: number }, { tracking: string }>(`${prefix}_ship`, form);
    const Mails = stepTable<{ text: string }, string>(`${prefix}_mail`, form);
    // No generated id: the dead letter keeps the job's id, and goes back under it.
    const DeadShips = InboxSpec.table(`${prefix}_dead_ship`, column("id").type("bigint"))
      .payload(column("payload"), payloadOf<{ cents: number }>())
      .lastError(column("last_error"));
    await createTables(db, [Charges, Ships, Mails, DeadShips], closers);
    const Order = workflow("order_resumes", payloadOf<{ orderId: string }>())
      .step("charge", Charges, (input) => input)
      .step("ship", Ships, { after: ["charge"] }, (_, { charge }) => ({ cents: charge?.cents ?? 0 }))
      .step("mail", Mails, { after: ["charge", "ship"] }, (input, { ship }) => ({ text: `${input.orderId}: ${ship?.tracking}` }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Charges, "charge")
      .route(Ships, "ship")
      .route(Mails, "mail")
      .workflow(Order);
    closers.push(() => broker.close());
    let shipCalls = 0;
    let mailCalls = 0;
    const app = await new App({ name: "wf-resume", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(subscriber(InboxQueue.of(Charges, "charge").pollInterval(20), async (job, ctx) => ctx.ack({ cents: job.orderId.length * 100 })))
          .include(
            subscriber(InboxQueue.of(Ships, "ship").pollInterval(20).deadLetter(DeadShips), async (job, ctx) => {
              shipCalls++;
              return shipCalls === 1 ? HandlerOutcome.deadLetter("carrier down") : ctx.ack({ tracking: `tr_${job.cents}` });
            }),
          )
          .include(
            subscriber(InboxQueue.of(Mails, "mail").pollInterval(20), async (job, ctx) => {
              mailCalls++;
              return ctx.ack(job.text);
            }),
          ),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Order, { orderId: "o-17" });
    await expect(run.finished({ timeoutMs: 20_000, pollMs: 20 })).rejects.toMatchObject({ reason: "failed", failure: { step: "ship", reason: "carrier down" } });
    expect(await run.state()).toMatchObject({ state: "failed", steps: { charge: "done", ship: "failed", mail: "waiting" } });
    const { rows: dead } = await sql<{ id: unknown }>`SELECT id FROM ${sql.id(DeadShips.table)}`.execute(db);
    expect(dead).toHaveLength(1);
    expect(await countOf(db, Ships.table)).toBe(0);
    expect(await countOf(db, Mails.table)).toBe(0);

    // Moved back as `sqlinbox retry` does: one transaction locks the dead letters, copies them back, deletes them.
    const ops = operatorFor(engine.engine);
    const place: DeadLetterPlace = { kind: "table", destination: DeadShips.description };
    await db.transaction().execute(async (trx) => {
      const locked = (await trx.executeQuery(ops.lockDeadLetterIds(Ships.description, place, 10))).rows.map((r) => r.id);
      expect(locked).toHaveLength(1);
      for (const query of ops.retryDeadLetters(Ships.description, place, locked)) await trx.executeQuery(query);
    });

    // finished() ends at a failed run: wait until the moved-back job's ack resumes it.
    for (const deadline = Date.now() + 20_000; (await run.state()).state === "failed" && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    const results = await run.finished({ timeoutMs: 20_000, pollMs: 20 });
    expect(results).toEqual({ charge: { cents: 400 }, ship: { tracking: "tr_400" }, mail: "o-17: tr_400" });
    const typed: { tracking: string } | null = results.ship;
    expect(typed?.tracking).toBe("tr_400");
    expect(await run.state()).toMatchObject({ state: "done", steps: { charge: "done", ship: "done", mail: "done" } });
    expect(shipCalls).toBe(2);
    // The job went back under its id; the step after it was published once, after the resume.
    expect((await rowsOf(db, Ships.table)).map((r) => String(r.id))).toEqual([String(dead[0]?.id)]);
    expect(await countOf(db, Mails.table)).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(mailCalls).toBe(1);
    expect(await countOf(db, DeadShips.table)).toBe(0);
  });

  test("a step dead-lettered into a group of its table keeps its row: moved back and acked, the run resumes", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfg").toLowerCase();
    const Firsts = stepTable<{ n: number }, number>(`${prefix}_first`, form);
    const grouped = InboxSpec.table(`${prefix}_second`, column("id").generated())
      .attempt(column("attempt").generated())
      .processedAt(column("processed_at"))
      .group(column("grp"))
      .result(column("result"), resultOf<number>())
      .payload(column("payload"), payloadOf<{ n: number }>());
    const Seconds = (form === "lease" ? grouped.lease(column("locked_until")) : form === "advisory" ? grouped.advisoryLock("wfg-{id}") : grouped) as typeof grouped;
    const Thirds = stepTable<{ n: number }, number>(`${prefix}_third`, form);
    await createTables(db, [Firsts, Seconds, Thirds], closers);
    const Chain = workflow("chain_resumes", payloadOf<{ n: number }>())
      .step("first", Firsts, (input) => input)
      .step("second", Seconds, { after: ["first"] }, (_, { first }) => ({ n: first ?? 0 }))
      .step("third", Thirds, { after: ["second"] }, (_, { second }) => ({ n: second ?? 0 }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Firsts, "first")
      .route(Seconds, "second")
      .route(Thirds, "third")
      .workflow(Chain);
    closers.push(() => broker.close());
    let secondCalls = 0;
    let thirdCalls = 0;
    const app = await new App({ name: "wf-resume-group", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(subscriber(InboxQueue.of(Firsts, "first").pollInterval(20), async (job, ctx) => ctx.ack(job.n + 1)))
          .include(
            subscriber(InboxQueue.of(Seconds, "second").pollInterval(20).deadLetter({ group: "second.dead" }), async (job, ctx) => {
              secondCalls++;
              return secondCalls === 1 ? HandlerOutcome.deadLetter("not yet") : ctx.ack(job.n * 10);
            }),
          )
          .include(
            subscriber(InboxQueue.of(Thirds, "third").pollInterval(20), async (job, ctx) => {
              thirdCalls++;
              return ctx.ack(job.n + 1);
            }),
          ),
      )
      .start();
    closers.push(() => app.stop());

    const run = await broker.startWorkflow(Chain, { n: 1 });
    await expect(run.finished({ timeoutMs: 20_000, pollMs: 20 })).rejects.toMatchObject({ reason: "failed", failure: { step: "second", reason: "not yet" } });
    expect(await countOf(db, Thirds.table)).toBe(0);

    const ops = operatorFor(engine.engine);
    const place: DeadLetterPlace = { kind: "group", group: "second", deadGroup: "second.dead" };
    await db.transaction().execute(async (trx) => {
      const locked = (await trx.executeQuery(ops.lockDeadLetterIds(Seconds.description, place, 10))).rows.map((r) => r.id);
      expect(locked).toHaveLength(1);
      for (const query of ops.retryDeadLetters(Seconds.description, place, locked)) await trx.executeQuery(query);
    });
    for (const deadline = Date.now() + 20_000; (await run.state()).state === "failed" && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(run.finished({ timeoutMs: 20_000, pollMs: 20 })).resolves.toEqual({ first: 2, second: 20, third: 21 });
    expect(secondCalls).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(thirdCalls).toBe(1);
    expect(await countOf(db, Thirds.table)).toBe(1);
  });
});
