/**
 * The test helpers are typed by the app: `publish`, `published`, `assertPublished` take the routes the
 * app's brokers declare, their payloads and every publish option their tables take; `performJob`'s
 * payload is the subscriber's, and its `attempt` and `headers` compile only where the table has the column.
 * A typed test app still fits a `TestApp` variable.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import type { Transaction } from "kysely";
import { describe, expectTypeOf, test } from "vitest";
import { App, InboxQueue, SqlBroker, subscriber, type Published } from "../../src/index.js";
import { TestApp, type PerformedJob, type PublishedJob } from "../../src/testing/index.js";

interface Mail {
  readonly to: string;
  readonly cc?: { readonly name: string; readonly address: string };
}
/** Every option has a column: priority, a run-at, a key, headers, a typed data column; an attempt. */
const Full = InboxSpec.table("mail_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .priority(column("priority"))
  .retryAfter(column("retry_after"))
  .key(column("job_key"))
  .headers(column("headers"))
  .data(column("tenant").holds<number>())
  .payload(column("payload"), payloadOf<Mail>());
/** Nothing but a lease and a payload. */
const Bare = InboxSpec.table("bare_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<{ readonly n: number }>());

const broker = SqlBroker.fromUrl("sqlite::memory:").route(Full, "mail").route(Bare, "bare");
const send = subscriber(InboxQueue.of(Full, "mail"), async () => {});
const count = subscriber(InboxQueue.of(Bare, "bare"), async () => {});
const app = new App({ name: "t", version: "0" }).withBroker(broker, (b) => b.include(send).include(count));
declare const t: TestApp<{ mail: typeof Full; bare: typeof Bare }>;
declare const trx: Transaction<{ invoices: { id: number; total: number } }>;

describe("TestApp types", () => {
  test("start infers the app's routes; a typed test app fits a TestApp variable", async () => {
    const started = await TestApp.start(app);
    expectTypeOf(started.published("mail")).toEqualTypeOf<PublishedJob<Mail>[]>();
    const loose: TestApp = started;
    expectTypeOf(loose).toEqualTypeOf<TestApp>();
  });

  test("publish takes the route's payload and every option its table has", async () => {
    expectTypeOf(t.publish("mail", { to: "a" }, { priority: 1, runAt: new Date(), key: "k", headers: { traceparent: "x" }, columns: { tenant: 7 } })).toEqualTypeOf<
      Promise<Published>
    >();
    await t.publish("mail", { to: "a" }, { delay: 1000 });
    await t.publish("mail", { to: "a" }, { via: trx }); // inside the application's own transaction
    // @ts-expect-error: a route no broker of the app declares
    await t.publish("nowhere", { to: "a" });
    // @ts-expect-error: not the route's payload
    await t.publish("mail", { n: 1 });
    // @ts-expect-error: the bare table has no priority column
    await t.publish("bare", { n: 1 }, { priority: 1 });
    // @ts-expect-error: the data column holds a number
    await t.publish("mail", { to: "a" }, { columns: { tenant: "x" } });
  });

  test("assertPublished takes any part of the route's payload", () => {
    expectTypeOf(t.assertPublished("mail", { cc: { name: "Ann" } })).toEqualTypeOf<PublishedJob<Mail>[]>();
    t.assertPublished("mail", undefined, { times: 2, priority: 1 });
    t.assertNotPublished("bare");
    // @ts-expect-error: no such field in the payload
    t.assertPublished("mail", { subject: "hi" });
    // @ts-expect-error: a route no broker of the app declares
    t.assertNotPublished("nowhere");
  });

  test("performJob takes the subscriber's payload; attempt and headers only where the table has the column", async () => {
    expectTypeOf(t.performJob(send, { to: "a" }, { attempt: 3, headers: { traceparent: "x" }, columns: { tenant: 1 } })).toEqualTypeOf<Promise<PerformedJob>>();
    await t.performJob(count, { n: 1 });
    // @ts-expect-error: not the subscriber's payload
    await t.performJob(count, { to: "a" });
    // @ts-expect-error: the bare table has no attempt column
    await t.performJob(count, { n: 1 }, { attempt: 2 });
    // @ts-expect-error: the bare table has no headers column
    await t.performJob(count, { n: 1 }, { headers: {} });
  });
});
