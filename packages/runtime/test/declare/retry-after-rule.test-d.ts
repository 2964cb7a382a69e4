/**
 * The rule on delays: a handler that can return `retryAfter` does not compile on a table with
 * nowhere to store a time (row lock or advisory without a retryAfter column) — a delay is never
 * served by holding the row. Where a column stores it (retryAfter, or the lease) it compiles.
 */
import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, defineInbox, field, payloadOf } from "@sqlinbox/core";
import { HandlerOutcome, InboxQueue, seconds, subscriber, type Handler, type HandlerResultFor, type Outputs } from "../../src/index.js";

interface Report {
  readonly id: string;
}

const RowLock = InboxSpec.table("report_jobs", column("id").generated()).attempt(column("attempt").generated()).payload(column("payload"), payloadOf<Report>());
const Advisory = defineInbox({
  table: "report_jobs",
  columns: { id: field.id().generated(), customer: field.data("customer_id"), payload: field.payload<Report>() },
  advisoryLock: "report-{customer_id}",
});
const Delayed = RowLock.retryAfter(column("retry_after"));
const DelayedAdvisory = defineInbox({
  table: "report_jobs",
  columns: { id: field.id().generated(), retryAfter: field.retryAfter("retry_after"), payload: field.payload<Report>() },
  advisoryLock: "report-{id}",
});
const Leased = InboxSpec.table("report_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>());
// Row mode: the handler receives the row; the rule is the same.
const RowModeLocked = defineInbox({ table: "exports", columns: { id: field.id<number>().generated(), customer_id: field.data<string>() } });

declare function busy(report: Report): boolean;

describe("a handler's retryAfter without a column to store it", () => {
  test("the function form does not compile on a row-lock table: an expression body, a block body, a sync handler", () => {
    // @ts-expect-error retryAfter needs a retryAfter column: this row-lock table has nowhere to store a time
    subscriber(InboxQueue.of(RowLock, "reports"), async () => HandlerOutcome.retryAfter(seconds(30)));
    subscriber(
      InboxQueue.of(RowLock, "reports"),
      // @ts-expect-error one return of many is enough
      async (report) => {
        if (busy(report)) return HandlerOutcome.retryAfter(seconds(30));
        return HandlerOutcome.ack();
      },
    );
    // @ts-expect-error a handler without a promise too
    subscriber(InboxQueue.of(RowLock, "reports"), () => HandlerOutcome.retryAfter(1000));
  });

  test("the function form does not compile on an advisory table, nor in row mode", () => {
    // @ts-expect-error retryAfter needs a retryAfter column: this advisory table has nowhere to store a time
    subscriber(InboxQueue.of(Advisory, "reports"), async () => HandlerOutcome.retryAfter(1000));
    // @ts-expect-error the row-mode handler of a row-lock table
    subscriber(InboxQueue.of(RowModeLocked, "exports"), async () => HandlerOutcome.retryAfter(1000));
  });

  test("the class form does not compile: the error is on handle", () => {
    class Render implements Handler<typeof RowLock> {
      // @ts-expect-error handle's result may be a retryAfter, which this table cannot store
      async handle(report: Report, _outs: Outputs) {
        return busy(report) ? HandlerOutcome.retryAfter(1000) : HandlerOutcome.ack();
      }
    }
    void Render;
  });

  test("the batch form does not compile, for one outcome per row or one for all", () => {
    // @ts-expect-error a retryAfter among the rows' outcomes
    subscriber.batch(InboxQueue.of(RowLock, "reports").batch(8), async (reports) => reports.map((r) => (busy(r) ? HandlerOutcome.retryAfter(1000) : HandlerOutcome.ack())));
    // @ts-expect-error one retryAfter for all
    subscriber.batch(InboxQueue.of(Advisory, "reports").batch(8), async () => HandlerOutcome.retryAfter(1000));
  });

  test("every other outcome compiles there", () => {
    subscriber(InboxQueue.of(RowLock, "reports"), async (report) => (busy(report) ? HandlerOutcome.retry() : HandlerOutcome.ack()));
    subscriber(InboxQueue.of(Advisory, "reports"), async () => HandlerOutcome.drop());
    subscriber(InboxQueue.of(RowLock, "reports"), async () => {});
    subscriber(InboxQueue.of(RowLock, "reports").deadLetter(RowLock), async () => HandlerOutcome.deadLetter("no"));
    subscriber.batch(InboxQueue.of(RowLock, "reports").batch(8), async (reports) => reports.map(() => HandlerOutcome.retry()));
    class Render implements Handler<typeof RowLock> {
      async handle() {
        return HandlerOutcome.ack();
      }
    }
    void Render;
  });
});

describe("a handler's retryAfter where a column stores it", () => {
  test("a retryAfter column (row lock, advisory) or the lease column", () => {
    subscriber(InboxQueue.of(Delayed, "reports"), async () => HandlerOutcome.retryAfter(1000));
    subscriber(InboxQueue.of(DelayedAdvisory, "reports"), async () => HandlerOutcome.retryAfter(1000));
    subscriber(InboxQueue.of(Leased, "reports"), async () => HandlerOutcome.retryAfter(1000));
    subscriber.batch(InboxQueue.of(Delayed, "reports").batch(8), async (reports) => reports.map(() => HandlerOutcome.retryAfter(1000)));
    class Render implements Handler<typeof Leased> {
      async handle() {
        return HandlerOutcome.retryAfter(1000);
      }
    }
    void Render;
  });

  test("HandlerResultFor says which outcomes a table's handler may return", () => {
    expectTypeOf(HandlerOutcome.retryAfter(1)).toExtend<HandlerResultFor<typeof Delayed>>();
    expectTypeOf(HandlerOutcome.retryAfter(1)).toExtend<HandlerResultFor<typeof Leased>>();
    expectTypeOf(HandlerOutcome.retryAfter(1)).not.toExtend<HandlerResultFor<typeof RowLock>>();
    expectTypeOf(HandlerOutcome.retryAfter(1)).not.toExtend<HandlerResultFor<typeof Advisory>>();
    expectTypeOf(HandlerOutcome.retry()).toExtend<HandlerResultFor<typeof RowLock>>();
  });
});
