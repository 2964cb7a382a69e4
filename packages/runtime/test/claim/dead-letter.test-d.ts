/** The compile-time rules of dead letters and failure policies. */
import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, defineInbox, field, payloadOf } from "@sqlinbox/core";
import { HandlerOutcome, InboxQueue } from "../../src/index.js";

interface Report {
  readonly id: string;
}
interface Invoice {
  readonly total: number;
}

const Reports = InboxSpec.table("report_jobs", column("id").generated()).attempt(column("attempt").generated()).payload(column("payload"), payloadOf<Report>());
const DeadReports = InboxSpec.table("dead_reports", column("id").generated())
  .payload(column("payload"), payloadOf<Report>())
  .lastError(column("last_error"))
  .failedAttempts(column("failed_attempts"));
const DeadInvoices = InboxSpec.table("dead_invoices", column("id").generated()).payload(column("payload"), payloadOf<Invoice>());
const NoAttempt = InboxSpec.table("no_attempt", column("id").generated()).payload(column("payload"), payloadOf<Report>());
const Grouped = defineInbox({
  table: "grouped",
  columns: { id: field.id().generated(), attempt: field.attempt().generated(), grp: field.group(), payload: field.payload<Report>() },
});
const Leased = InboxSpec.table("leased", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"), payloadOf<Report>());
const Delayed = Reports.retryAfter(column("retry_after"));

describe("InboxQueue.deadLetter", () => {
  test("a table with the same payload type, with maxAttempts where the table counts attempts", () => {
    expectTypeOf(InboxQueue.of(Reports, "reports").deadLetter(DeadReports, { maxAttempts: 5 })).toEqualTypeOf<InboxQueue<typeof Reports>>();
    InboxQueue.of(Reports, "reports").deadLetter(DeadReports);
    InboxQueue.of(NoAttempt, "reports").deadLetter(DeadReports);
  });

  test("a destination whose payload type differs does not compile", () => {
    // @ts-expect-error the dead-letter table's payload type differs from this queue's
    InboxQueue.of(Reports, "reports").deadLetter(DeadInvoices, { maxAttempts: 5 });
  });

  test("maxAttempts on a table without an attempt column does not compile", () => {
    // @ts-expect-error maxAttempts needs an attempt column
    InboxQueue.of(NoAttempt, "reports").deadLetter(DeadReports, { maxAttempts: 5 });
  });

  test("a group destination only on a table with a group column", () => {
    InboxQueue.of(Grouped, "reports").deadLetter({ group: "dead" }, { maxAttempts: 3 });
    // @ts-expect-error a dead-letter group needs a group column
    InboxQueue.of(Reports, "reports").deadLetter({ group: "dead" });
  });
});

describe("failure policies", () => {
  test("a policy returns an outcome from the error, the attempt and the context", () => {
    InboxQueue.of(Reports, "reports").onError((error, attempt, ctx) => {
      expectTypeOf(error).toEqualTypeOf<unknown>();
      expectTypeOf(attempt).toEqualTypeOf<number | undefined>();
      expectTypeOf(ctx.maxAttempts).toEqualTypeOf<number | undefined>();
      return (attempt ?? 0) >= 3 ? HandlerOutcome.deadLetter(String(error)) : HandlerOutcome.retry();
    });
    InboxQueue.of(Reports, "reports").onDecodeError(() => HandlerOutcome.drop());
  });

  test("a delay on a row-lock or advisory table without a retryAfter column does not compile", () => {
    // @ts-expect-error retryAfter is not an outcome this table can store
    InboxQueue.of(Reports, "reports").onError(() => HandlerOutcome.retryAfter(60_000));
    // @ts-expect-error retryAfter is not an outcome this table can store
    InboxQueue.of(Reports, "reports").onDecodeError(() => HandlerOutcome.retryAfter(60_000));
  });

  test("a delay compiles where a column stores it: retryAfter, or the lease", () => {
    InboxQueue.of(Delayed, "reports").onError(() => HandlerOutcome.retryAfter(60_000));
    InboxQueue.of(Leased, "reports").onError(() => HandlerOutcome.retryAfter(60_000));
  });
});
