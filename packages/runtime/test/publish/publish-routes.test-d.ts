/**
 * Compile-time rules of publishing: `publishMany` is typed like `publish`; a prefix route types the
 * names it takes; `{ headers }` compiles only on a table with a headers column; `keys.headers` only
 * in the context of such a table; `fromKysely(db, { listen })` takes a client factory or a pool.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import type { Kysely } from "kysely";
import pg from "pg";
import { describe, expectTypeOf, test } from "vitest";
import { InboxQueue, SqlBroker, keys, subscriber, type Published } from "../../src/index.js";

interface Report {
  readonly title: string;
}
interface Mail {
  readonly to: string;
}
const Reports = InboxSpec.table("report_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>()).headers(column("headers"));
const Mails = InboxSpec.table("mail_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Mail>());
const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Reports, "reports.*").route(Mails, "mail");

describe("publish and publishMany", () => {
  test("a prefix route types the names it takes; publishMany takes an array of the same payload", async () => {
    await broker.publish("reports.daily", { title: "Q3" });
    await broker.publishMany("reports.daily", [{ title: "Q3" }, { title: "Q4" }]);
    expectTypeOf(broker.publishMany("mail", [{ to: "a@b" }])).toEqualTypeOf<Promise<Published[]>>();
    // @ts-expect-error a Report is not a Mail
    await broker.publish("mail", { title: "Q3" });
    // @ts-expect-error every element is a Report on reports.*
    await broker.publishMany("reports.weekly", [{ title: "Q3" }, { to: "a@b" }]);
  });

  test("headers compile only on a route whose table has a headers column", async () => {
    await broker.publish("reports.daily", { title: "Q3" }, { headers: { traceparent: "00-…-01" } });
    await broker.publishMany("reports.daily", [{ title: "Q3" }], { headers: { traceparent: "00-…-01" } });
    // @ts-expect-error publish(…, { headers }) needs a headers column
    await broker.publish("mail", { to: "a@b" }, { headers: { traceparent: "00-…-01" } });
    // @ts-expect-error publishMany(…, { headers }) needs a headers column too
    await broker.publishMany("mail", [{ to: "a@b" }], { headers: { traceparent: "00-…-01" } });
    // @ts-expect-error header values are strings
    await broker.publish("reports.daily", { title: "Q3" }, { headers: { attempt: 1 } });
    await broker.publish("mail", { to: "a@b" }, {});
  });
});

describe("keys.headers", () => {
  test("is string pairs on a table with a headers column, and does not compile without one", () => {
    subscriber(InboxQueue.of(Reports, "reports.daily"), async (_report, ctx) => {
      expectTypeOf(ctx.get(keys.headers)).toEqualTypeOf<Readonly<Record<string, string>>>();
    });
    subscriber(InboxQueue.of(Mails, "mail"), async (_mail, ctx) => {
      // @ts-expect-error keys.headers needs a column with the headers role
      ctx.get(keys.headers);
    });
  });
});

describe("fromKysely(db, { listen })", () => {
  test("takes a pg client factory or a pg pool", () => {
    const db = {} as Kysely<unknown>;
    SqlBroker.fromKysely(db, { listen: () => new pg.Client() }).listenNotify();
    SqlBroker.fromKysely(db, { listen: new pg.Pool() }).listenNotify();
    // @ts-expect-error a connection string is not a listen source
    SqlBroker.fromKysely(db, { listen: "postgres://u@h/db" });
  });
});
