/**
 * The delay rule holds for `snooze` as for `retryAfter`: a snooze stores its delay in the same
 * column, so a handler or policy that can snooze does not compile on a table with nowhere to store
 * a time (row lock or advisory without a retryAfter column). Where a column stores it, it compiles.
 */
import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, defineInbox, field, payloadOf } from "@sqlinbox/core";
import { HandlerOutcome, InboxQueue, subscriber, type Handler } from "../../src/index.js";

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
const Leased = InboxSpec.table("report_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>());

declare function waiting(report: Report): boolean;

describe("snooze without a column to store its delay", () => {
  test("a function handler, a class handler and an onError policy do not compile on a row-lock or advisory table", () => {
    // @ts-expect-error retryAfter needs a retryAfter column: this row-lock table has nowhere to store a time (a snooze too)
    subscriber(InboxQueue.of(RowLock, "reports"), async () => HandlerOutcome.snooze(30_000));
    subscriber(
      InboxQueue.of(Advisory, "reports"),
      // @ts-expect-error one snooze among the returns is enough, on an advisory table too
      async (report) => (waiting(report) ? HandlerOutcome.snooze(1000) : HandlerOutcome.ack()),
    );
    class Wait implements Handler<typeof RowLock> {
      // @ts-expect-error handle's result may be a snooze, which this table cannot store
      async handle(report: Report) {
        return waiting(report) ? HandlerOutcome.snooze(1000) : HandlerOutcome.ack();
      }
    }
    // @ts-expect-error a policy that snoozes
    InboxQueue.of(RowLock, "reports").onError(() => HandlerOutcome.snooze(1000));
    void Wait;
  });

  test("a retryAfter column or a lease column stores it: it compiles", () => {
    subscriber(InboxQueue.of(Delayed, "reports"), async (report) => (waiting(report) ? HandlerOutcome.snooze(60_000) : HandlerOutcome.ack()));
    subscriber(InboxQueue.of(Leased, "reports"), async () => HandlerOutcome.snooze(60_000));
    InboxQueue.of(Delayed, "reports").onError(() => HandlerOutcome.snooze(1000));
    expectTypeOf(HandlerOutcome.snooze(5)).toEqualTypeOf<{ readonly kind: "snooze"; readonly ms: number }>();
  });
});
