/**
 * The test helpers of `TestApp`, on every engine: the log of published jobs with `assertPublished` and
 * `assertNotPublished` (and their failing messages), `publish` with every option, `performJob` (a real
 * context; a real transaction, committed on an ack and rolled back otherwise), `drain` through delays
 * and retries under the paused clock (and its bound), `assertCalled` and `assertNotCalled`.
 */
import { defineInbox, field } from "@sqlinbox/core";
import { sql } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, createInboxTable, HandlerOutcome, InboxQueue, keys, minutes, seconds, silentLogger, SqlBroker, subscriber } from "../../src/index.js";
import { TestApp } from "../../src/testing/index.js";
import { engines, unique } from "../support/engines.js";
import { useEngineConnection } from "../support/fixtures.js";

interface Mail {
  readonly to: string;
  readonly sentAt?: Date | string;
}

/** Every role a publish option writes: priority, run-at, key, headers, a data column; an attempt and a lease. */
function mailSpec(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      lockedUntil: field.lease("locked_until"),
      retryAfter: field.retryAfter("retry_after"),
      priority: field.priority(),
      key: field.key("job_key"),
      headers: field.headers(),
      tenant: field.data("tenant").holds<number>().type("bigint"),
      payload: field.payload<Mail>(),
    },
  });
}
type MailSpec = ReturnType<typeof mailSpec>;
type Handler = Parameters<typeof subscriber<MailSpec>>[1];

describe.each(engines)("TestApp helpers on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A fresh table and a test app whose "mail" subscriber runs `handler` (poll once a minute). */
  async function mailApp(handler: Handler, configure: (q: InboxQueue<MailSpec>) => InboxQueue<MailSpec> = (q) => q) {
    const table = unique("helpers");
    const spec = mailSpec(table);
    await createInboxTable(db, spec);
    cleanups.push(() => engine.dropTable(db, table));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "mail");
    const send = subscriber(configure(InboxQueue.of(spec, "mail").lease(minutes(1)).pollInterval(minutes(1))), handler);
    const app = new App({ name: "helpers", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(send));
    const t = await TestApp.start(app);
    cleanups.push(() => t.stop());
    const rows = async () => (await sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql.id(table)}`.execute(db)).rows.map((r) => Number(r.n))[0];
    return { t, send, broker, table, rows };
  }

  test("published(route) logs every publish with its options; assertPublished matches a part of the payload; its failure names what was expected and what was published", async () => {
    // Its rows stay (each delivery retries in an hour), so the dedup key stays held.
    const { t, broker } = await mailApp(() => HandlerOutcome.retryAfter(minutes(60)));
    const runAt = new Date(t.clock.now().getTime() + minutes(5));
    const first = await t.publish("mail", { to: "ann@example.com" }, { priority: 3, key: "welcome-ann", headers: { traceparent: "00-abc-def-01" }, columns: { tenant: 7 } });
    const again = await t.publish("mail", { to: "ann@example.com" }, { key: "welcome-ann" });
    await broker.publish("mail", { to: "bob@example.com" }, { runAt }); // the app's own broker: logged too
    expect(again).toEqual({ id: first.id, created: false });

    expect(t.published("mail")).toEqual([
      {
        route: "mail",
        payload: { to: "ann@example.com" },
        id: first.id,
        created: true,
        priority: 3,
        key: "welcome-ann",
        headers: { traceparent: "00-abc-def-01" },
        columns: { tenant: 7 },
      },
      { route: "mail", payload: { to: "ann@example.com" }, id: first.id, created: false, key: "welcome-ann" },
      { route: "mail", payload: { to: "bob@example.com" }, id: expect.any(String), created: true, runAt },
    ]);
    expect(t.assertPublished("mail", { to: "ann@example.com" }, { priority: 3, columns: { tenant: 7 } })).toHaveLength(1);
    t.assertPublished("mail", { to: "ann@example.com" }, { times: 2 });
    t.assertPublished("mail", undefined, { runAt });
    t.assertNotPublished("mail", { to: "cy@example.com" });

    expect(() => t.assertPublished("mail", { to: "cy@example.com" })).toThrow(
      'expected a job published to "mail" with a payload matching {"to":"cy@example.com"}, found 0; published to "mail": ' +
        '{"to":"ann@example.com"} with {"headers":{"traceparent":"00-abc-def-01"},"priority":3,"key":"welcome-ann","columns":{"tenant":7}}, ' +
        '{"to":"ann@example.com"} with {"key":"welcome-ann"} (not created: its key was held), ' +
        `{"to":"bob@example.com"} with {"runAt":"${runAt.toISOString()}"}`,
    );
    expect(() => t.assertPublished("mail", { to: "ann@example.com" }, { times: 1 })).toThrow(
      /^expected 1 job published to "mail" with a payload matching \{"to":"ann@example.com"\}, found 2; published to "mail": /,
    );
    expect(() => t.assertPublished("mail", { to: "bob@example.com" }, { priority: 1 })).toThrow(
      /^expected a job published to "mail" with a payload matching \{"to":"bob@example.com"\} and options matching \{"priority":1\}, found 0; /,
    );
    expect(() => t.assertNotPublished("mail", { to: "bob@example.com" })).toThrow(
      `expected no job with a payload matching {"to":"bob@example.com"} published to "mail", found 1; published to "mail": `,
    );
  });

  test("a failing assertion on a route with nothing published says so; a publish in a transaction is logged at its commit, never on a rollback", async () => {
    const { t, broker } = await mailApp(() => HandlerOutcome.ack());
    expect(() => t.assertPublished("mail")).toThrow('expected a job published to "mail" with any payload, found 0; nothing was published to "mail" (nor to any route)');
    await db
      .transaction()
      .execute(async (trx) => {
        await broker.publish("mail", { to: "rolled@example.com" }, { via: trx });
        throw new Error("roll back");
      })
      .catch(() => {});
    await db.transaction().execute(async (trx) => {
      await broker.publish("mail", { to: "kept@example.com" }, { via: trx });
      expect(t.published("mail")).toEqual([]); // not yet committed
    });
    await t.waitFor(() => t.published("mail").length > 0, 2000, "the committed publish in the log");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(t.published("mail").map((j) => j.payload)).toEqual([{ to: "kept@example.com" }]);
    t.assertNotPublished("mail", { to: "rolled@example.com" });
  });

  test("performJob runs the handler now with a real context, writes no row, and returns its outcome or the onError policy's", async () => {
    const seen: unknown[] = [];
    const { t, send, rows } = await mailApp(
      async (mail, ctx) => {
        seen.push({ mail, attempt: ctx.get(keys.attempt), headers: ctx.get(keys.headers), id: ctx.id, subscription: ctx.subscription, lease: ctx.get(keys.leaseDeadline) });
        if (mail.to === "boom") throw new Error("smtp down");
        return ctx.get(keys.attempt) < 3 ? HandlerOutcome.retryAfter(seconds(30)) : HandlerOutcome.ack();
      },
      (q) => q.onError(() => HandlerOutcome.retryAfter(minutes(2))),
    );
    const now = t.clock.now();
    expect(await t.performJob(send, { to: "ann@example.com", sentAt: now })).toEqual({ outcome: HandlerOutcome.retryAfter(seconds(30)) });
    expect(await t.performJob(send, { to: "ann@example.com" }, { attempt: 3, headers: { traceparent: "t" }, id: 42 })).toEqual({ outcome: HandlerOutcome.ack() });
    const failed = await t.performJob(send, { to: "boom" });
    expect(failed.outcome).toEqual(HandlerOutcome.retryAfter(minutes(2)));
    expect((failed.error as Error).message).toBe("smtp down");
    expect(seen).toEqual([
      // The payload went through the table's JSON, as a published one: the Date arrives as its text.
      { mail: { to: "ann@example.com", sentAt: now.toISOString() }, attempt: 1, headers: {}, id: 1, subscription: "mail", lease: new Date(now.getTime() + minutes(1)) },
      { mail: { to: "ann@example.com" }, attempt: 3, headers: { traceparent: "t" }, id: 42, subscription: "mail", lease: new Date(now.getTime() + minutes(1)) },
      { mail: { to: "boom" }, attempt: 1, headers: {}, id: 2, subscription: "mail", lease: new Date(now.getTime() + minutes(1)) },
    ]);
    expect(await rows()).toBe(0);
    t.assertNotCalled(send); // performJob is no delivery
  });

  test("performJob on a transactional queue: ctx.tx is a real transaction, committed on an ack, rolled back otherwise", async () => {
    const notes = unique("helper_notes");
    await sql`CREATE TABLE ${sql.id(notes)} (body VARCHAR(64) NOT NULL)`.execute(db);
    cleanups.push(() => engine.dropTable(db, notes));
    const table = unique("helpers_tx");
    const spec = mailSpec(table);
    await createInboxTable(db, spec);
    cleanups.push(() => engine.dropTable(db, table));
    const broker = SqlBroker.fromUrl(url, { pool: { max: 6 } }).route(spec, "mail");
    const send = subscriber(InboxQueue.of(spec, "mail").lease(minutes(1)).transactional(), async (mail, ctx) => {
      await sql`INSERT INTO ${sql.id(notes)} (body) VALUES (${mail.to})`.execute(ctx.tx);
      return mail.to === "kept" ? HandlerOutcome.ack() : HandlerOutcome.retry();
    });
    const t = await TestApp.start(new App({ name: "helpers", version: "0", logger: silentLogger }).withBroker(broker, (b) => b.include(send)));
    cleanups.push(() => t.stop());
    expect(await t.performJob(send, { to: "kept" })).toEqual({ outcome: HandlerOutcome.ack() });
    expect(await t.performJob(send, { to: "undone" })).toEqual({ outcome: HandlerOutcome.retry() });
    const bodies = (await sql<{ body: string }>`SELECT body FROM ${sql.id(notes)}`.execute(db)).rows.map((r) => r.body);
    expect(bodies).toEqual(["kept"]);
  });

  test("drain runs every due job, moving the paused clock through run-ats and retries, and returns what ran; assertCalled counts them", async () => {
    const { t, send, rows } = await mailApp(async (mail, ctx) =>
      mail.to === "flaky" && ctx.get(keys.attempt) === 1 ? HandlerOutcome.retryAfter(seconds(30)) : HandlerOutcome.ack(),
    );
    const start = t.clock.now().getTime();
    // Each due after the publish: what drain returns is what ran during the drain.
    await t.publish("mail", { to: "later" }, { delay: minutes(10) });
    await t.publish("mail", { to: "flaky" }, { delay: seconds(1) });
    await t.publish("mail", { to: "now" }, { delay: seconds(2) });
    const ran = await t.drain({ route: "mail" });
    expect(ran.map((c) => [(c.payload as Mail).to, c.attempt, c.outcome?.kind])).toEqual([
      ["flaky", 1, "retryAfter"],
      ["now", 1, "ack"],
      ["flaky", 2, "ack"],
      ["later", 1, "ack"],
    ]);
    expect(t.clock.now().getTime() - start).toBeGreaterThanOrEqual(minutes(10));
    expect(t.clock.now().getTime() - start).toBeLessThan(minutes(11)); // moved by due times, not poll by poll
    expect(await rows()).toBe(0);
    expect(await t.drain()).toEqual([]); // nothing left: returns at once
    expect(t.assertCalled(send, 4)).toHaveLength(4);
    expect(() => t.assertCalled(send, 2)).toThrow(
      'expected subscriber "mail" to be called 2 times, it was called 4 times: {"to":"flaky"}, {"to":"now"}, {"to":"flaky"}, {"to":"later"}',
    );
    expect(() => t.assertNotCalled(send)).toThrow(
      'expected subscriber "mail" not to be called, it was called 4 times: {"to":"flaky"}, {"to":"now"}, {"to":"flaky"}, {"to":"later"}',
    );
  });

  test("drain stops at its bound, naming what is left; assertNotCalled holds before any delivery", async () => {
    const { t, send } = await mailApp(async () => HandlerOutcome.retryAfter(seconds(5)));
    t.assertNotCalled(send);
    expect(() => t.assertCalled(send, 1)).toThrow('expected subscriber "mail" to be called 1 time, it was called 0 times');
    await t.publish("mail", { to: "forever" });
    await expect(t.drain({ route: "mail", maxDeliveries: 3 })).rejects.toThrow('drain() reached maxDeliveries (3) with 1 row of "mail" still to finish, after 3 deliveries');
    await expect(t.drain({ maxMs: seconds(20) })).rejects.toThrow(
      /^drain\(\) reached maxMs \(20000 ms on the paused clock\) with 1 row of "mail" still to finish, after \d+ deliveries$/,
    );
    await expect(t.drain({ route: "nowhere" })).rejects.toThrow('drain(): no subscription of this app consumes "nowhere"');
  });
});
