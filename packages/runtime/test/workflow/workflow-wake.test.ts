/**
 * A released step is claimed at once, not at its subscription's next poll: the ack that released it wakes
 * this process's subscriptions of the step's table once it commits (and a start without `via`, at once),
 * on every engine and form. The subscriptions poll once a minute here: only the wakes can finish the run in time.
 */
import { payloadOf, workflow } from "@sqlinbox/core";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, InboxQueue, SqlBroker, silentLogger, subscriber } from "../../src/index.js";
import { matrix } from "../support/claim-forms.js";
import { unique } from "../support/engines.js";
import { createTables, stepTable } from "./support.js";

const POLL_MS = 60_000;

describe.each(matrix)("a released step wakes its subscription on $engine.name × $form", ({ engine, form }) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("three steps and a fan-out run end to end within seconds while every subscription polls once a minute", async () => {
    const url = engine.url();
    const db: AnyKysely = await engine.connect(url);
    closers.push(() => db.destroy());
    const prefix = unique("wfw").toLowerCase();
    const Firsts = stepTable<{ n: number }, number[]>(`${prefix}_first`, form);
    const Parts = stepTable<{ n: number }, number>(`${prefix}_part`, form);
    const Lasts = stepTable<{ sum: number }, number>(`${prefix}_last`, form);
    await createTables(db, [Firsts, Parts, Lasts], closers);
    const Woken = workflow("woken", payloadOf<{ n: number }>())
      .step("first", Firsts, (input) => input)
      .each("part", Parts, { over: "first" }, (_, n) => ({ n }))
      .step("last", Lasts, { after: ["part"] }, (_, { part }) => ({ sum: part.reduce<number>((a, b) => a + (b ?? 0), 0) }));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 8 } })
      .route(Firsts, "first")
      .route(Parts, "part")
      .route(Lasts, "last")
      .workflow(Woken);
    closers.push(() => broker.close());
    const app = await new App({ name: "wf-wake", version: "0", logger: silentLogger })
      .withBroker(broker, (b) =>
        b
          .include(subscriber(InboxQueue.of(Firsts, "first").pollInterval(POLL_MS), async (job, ctx) => ctx.ack([job.n, job.n + 1])))
          .include(subscriber(InboxQueue.of(Parts, "part").pollInterval(POLL_MS).workers(2), async (job, ctx) => ctx.ack(job.n * 10)))
          .include(subscriber(InboxQueue.of(Lasts, "last").pollInterval(POLL_MS), async (job, ctx) => ctx.ack(job.sum))),
      )
      .start();
    closers.push(() => app.stop());
    // Every subscription has made its first claim (nothing to claim) and waits for its next poll.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const run = await broker.startWorkflow(Woken, { n: 1 });
    await expect(run.finished({ timeoutMs: 10_000, pollMs: 20 })).resolves.toEqual({ first: [1, 2], part: [10, 20], last: 30 });
  });
});
