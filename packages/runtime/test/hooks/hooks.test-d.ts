import { InboxSpec, column, payloadOf } from "@sqlinbox/core/internal";
import { describe, expectTypeOf, test } from "vitest";
import { App, HandlerOutcome, SqlBroker, keys, type Delivery, type JobEvents, type Middleware, type PublishedRow } from "../../src/index.js";

interface Report {
  readonly customer: string;
}
interface Mail {
  readonly to: string;
}
const Reports = InboxSpec.table("reports", column("id").generated()).attempt(column("attempt")).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>());
const Mails = InboxSpec.table("mails", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Mail>());
const broker = SqlBroker.fromUrl("sqlite::memory:").route(Reports, "reports").route(Mails, "mails");
const app = new App({ name: "t", version: "0" }).withBroker(broker, (b) => b);

describe("middleware, as types", () => {
  test("a route's middleware sees that route's payload; another route's payload type does not fit", () => {
    app.use("reports", async (delivery, _ctx, next) => {
      if (delivery.kind === "row") expectTypeOf(delivery.payload).toEqualTypeOf<Report>();
      else expectTypeOf(delivery.payloads).toEqualTypeOf<readonly Report[]>();
      return next();
    });
    const forMails: Middleware<Mail> = (_d, _c, next) => next();
    // @ts-expect-error a middleware of the mails route cannot be given to the reports route
    app.use("reports", forMails);
    // @ts-expect-error a middleware typed for mail deliveries does not fit the reports route
    app.use("reports", (_delivery: Delivery<Mail>, _ctx, next) => next());
    // @ts-expect-error only a route the app knows
    app.use("invoices", (_d, _c, next) => next());
  });

  test("a middleware reads the route's context keys, and returns an outcome", () => {
    app.use("reports", (_delivery, ctx, next) => {
      if ("get" in ctx) expectTypeOf(ctx.get(keys.attempt)).toEqualTypeOf<number>();
      return next();
    });
    app.use("mails", (_delivery, ctx, next) => {
      // @ts-expect-error the mails table has no attempt column
      if ("get" in ctx) ctx.get(keys.attempt);
      return next();
    });
    app.use(() => HandlerOutcome.retryAfter(1000));
    // @ts-expect-error a middleware returns an outcome (or what next() gave it)
    app.use(() => "done");
  });
});

describe("lifecycle events, as types", () => {
  test("each event carries what it says", () => {
    app.on("retried", (e) => expectTypeOf(e.delayMs).toEqualTypeOf<number>());
    app.on("retried", (e) => expectTypeOf(e.outcome).toEqualTypeOf<"retry" | "retryAfter">());
    app.on("failed", (e) => expectTypeOf(e.error).toEqualTypeOf<unknown>());
    app.on("deadLettered", (e) => expectTypeOf(e.reason).toEqualTypeOf<string | undefined>());
    app.on("published", (e) => {
      expectTypeOf(e.id).toEqualTypeOf<string>();
      expectTypeOf(e.created).toEqualTypeOf<boolean>();
    });
    app.on("started", (e) => expectTypeOf(e.attempt).toEqualTypeOf<number | undefined>());
    expectTypeOf<JobEvents["succeeded"]["durationMs"]>().toEqualTypeOf<number | undefined>();
    // @ts-expect-error a succeeded job has no delay
    app.on("succeeded", (e) => e.delayMs);
    // @ts-expect-error no such event
    app.on("finished", () => {});
  });
});

describe("claims, settlement failures and publish middleware, as types", () => {
  test("claimed carries the rows and the time, no job; a failed settlement names the outcome it was writing", () => {
    app.on("claimed", (e) => {
      expectTypeOf(e.rows).toEqualTypeOf<number>();
      expectTypeOf(e.durationMs).toEqualTypeOf<number>();
    });
    // @ts-expect-error a claim is no job: it has no id
    app.on("claimed", (e) => e.id);
    app.on("settlementFailed", (e) => expectTypeOf(e.outcome).toEqualTypeOf<HandlerOutcome["kind"]>());
    app.on("leaseLost", (e) => expectTypeOf(e.outcome).toEqualTypeOf<HandlerOutcome["kind"]>());
    app.on("undecodable", (e) => {
      expectTypeOf(e.written).toEqualTypeOf<boolean>();
      expectTypeOf(e.error).toEqualTypeOf<unknown>();
    });
    // @ts-expect-error an undecodable row reached no handler: it has no payload
    app.on("undecodable", (e) => e.payload);
  });

  test("a publish middleware sees the headers it may add to, and returns what next() wrote", () => {
    app.usePublish(async (publish, next) => {
      expectTypeOf(publish.headers).toEqualTypeOf<Record<string, string> | undefined>();
      const rows = await next();
      expectTypeOf(rows).toEqualTypeOf<readonly PublishedRow[]>();
      return rows;
    });
    // @ts-expect-error a publish middleware resolves to the rows written
    app.usePublish(async () => "done");
    app.usePublish(async (publish, next) => {
      // @ts-expect-error the route is given, not changed
      publish.route = "other";
      return next();
    });
  });
});
