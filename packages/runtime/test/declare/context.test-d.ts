import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, payloadOf, type RolesOf } from "@sqlinbox/core";
import { Ctx, HandlerOutcome, InboxQueue, keys, subscriber, type Handler, type InboxContext, type Outputs } from "../../src/index.js";

interface Report {
  readonly title: string;
}
const Leased = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"), payloadOf<Report>());
const NoAttempt = InboxSpec.table("plain_jobs", column("id")).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>());
const RowLock = InboxSpec.table("locked_jobs", column("id")).attempt(column("attempt")).payload(column("payload"), payloadOf<Report>());

describe("typed context", () => {
  test("ctx.get(keys.attempt) is a number on a table with an attempt column", () => {
    subscriber(InboxQueue.of(Leased, "reports"), async (report, ctx) => {
      expectTypeOf(report).toEqualTypeOf<Report>();
      expectTypeOf(ctx.get(keys.attempt)).toEqualTypeOf<number>();
      expectTypeOf(ctx.get(keys.leaseDeadline)).toEqualTypeOf<Date>();
      expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>();
      return HandlerOutcome.ack();
    });
  });

  test("ctx.get(keys.attempt) does not compile without an attempt column", () => {
    subscriber(InboxQueue.of(NoAttempt, "plain"), async (_report, ctx) => {
      // @ts-expect-error keys.attempt needs a column with the attempt role
      ctx.get(keys.attempt);
      ctx.get(keys.id);
    });
  });

  test("Ctx(keys.attempt).from(ctx) in the class form, and its error without an attempt column", () => {
    class Render implements Handler<typeof Leased> {
      async handle(_report: Report, _outs: Outputs, ctx: InboxContext<RolesOf<typeof Leased>>) {
        expectTypeOf(Ctx(keys.attempt).from(ctx)).toEqualTypeOf<number>();
      }
    }
    subscriber(InboxQueue.of(Leased, "reports"), new Render());
    subscriber(InboxQueue.of(NoAttempt, "plain"), async (_report, ctx) => {
      // @ts-expect-error keys.attempt needs a column with the attempt role
      Ctx(keys.attempt).from(ctx);
    });
  });
});

describe("InboxQueue", () => {
  test("lease(ms) compiles on a table with a lease column only", () => {
    InboxQueue.of(Leased, "reports").lease(60_000).workers(2).batch(4).pollInterval(500);
    // @ts-expect-error InboxQueue.lease needs a table with a lease column
    InboxQueue.of(RowLock, "locked").lease(60_000);
  });

  test("a handler's payload is the table's payload type", () => {
    // @ts-expect-error the handler takes a number, the table holds Reports
    subscriber(InboxQueue.of(Leased, "reports"), async (n: number) => void n);
  });
});
