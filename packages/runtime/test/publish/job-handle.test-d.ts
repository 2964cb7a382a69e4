/**
 * Compile-time rules of job handles: `broker.job` takes only a route the broker's type knows; a
 * state carries a column only where the job's table has it (`attempt`, `runAt`, `leaseUntil`,
 * `lastError`), `done` exists only on a table with a processedAt column, and a dead-letter place is
 * checked as `InboxQueue.deadLetter` checks it.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker, type FinishedJob, type JobHandle, type JobState, type Published } from "../../src/index.js";

interface Report {
  readonly title: string;
}
interface Mail {
  readonly to: string;
}
const Reports = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .retryAfter(column("retry_after"))
  .processedAt(column("processed_at"))
  .group(column("grp"))
  .payload(column("payload"), payloadOf<Report>());
const Mails = InboxSpec.table("mail_jobs", column("id").generated()).advisoryLock("mail-{id}").payload(column("payload"), payloadOf<Mail>());
const DeadReports = InboxSpec.table("dead_reports", column("id")).payload(column("payload"), payloadOf<Report>()).lastError(column("last_error"));
const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Reports, "reports").route(Mails, "mail");
type ReportState = JobState<typeof Reports>;
type MailState = JobState<typeof Mails>;

describe("broker.job", () => {
  test("a handle is typed by its route's table; the id is text, or what a publish resolved to", () => {
    expectTypeOf(broker.job("reports", 7)).toEqualTypeOf<JobHandle<typeof Reports>>();
    expectTypeOf(broker.job("mail", "7")).toEqualTypeOf<JobHandle<typeof Mails>>();
    expectTypeOf(broker.job("reports", {} as Published).id).toEqualTypeOf<string>();
    // @ts-expect-error this broker's type routes no such name
    broker.job("report", 7);
    // @ts-expect-error an id is text, a number or a bigint
    broker.job("reports", { id: 7 });
  });

  test("state() carries a column only where the table has it", async () => {
    const state = await broker.job("reports", 7).state();
    if (state.state === "running" || state.state === "waiting" || state.state === "scheduled") {
      expectTypeOf(state.attempt).toEqualTypeOf<number>();
      expectTypeOf(state.leaseUntil).toEqualTypeOf<Date | null>();
      expectTypeOf(state.runAt).toEqualTypeOf<Date | null>();
      // @ts-expect-error Reports has no last-error column
      void state.lastError.length;
    }
    const mail = await broker.job("mail", 7).state();
    if (mail.state === "running") {
      // @ts-expect-error Mails has no attempt column
      void mail.attempt.toFixed();
      // @ts-expect-error nor a lease column
      void mail.leaseUntil.getTime();
    }
  });

  test("done exists only where the table keeps handled rows (processedAt)", () => {
    expectTypeOf<Extract<ReportState, { state: "done" }>["processedAt"]>().toEqualTypeOf<Date>();
    expectTypeOf<Extract<MailState, { state: "done" }>>().toBeNever();
    expectTypeOf<MailState["state"]>().toEqualTypeOf<"scheduled" | "waiting" | "running" | "deadLettered" | "gone">();
  });

  test("finished() resolves with the end a table can show: done where it keeps rows, else gone", () => {
    expectTypeOf(broker.job("reports", 7).finished()).toEqualTypeOf<Promise<FinishedJob<typeof Reports>>>();
    expectTypeOf<FinishedJob<typeof Mails>["state"]>().toEqualTypeOf<"gone">();
    expectTypeOf<FinishedJob<typeof Reports>["state"]>().toEqualTypeOf<"done" | "gone">();
  });

  test("a dead-letter place is a table with the same payload, or a group of a table that has a group column", () => {
    broker.job("reports", 7, { deadLetter: DeadReports });
    broker.job("reports", 7, { deadLetter: { group: "reports.dead" } });
    // @ts-expect-error the dead-letter table's payload type differs from this queue's
    broker.job("mail", 7, { deadLetter: DeadReports });
    // @ts-expect-error a dead-letter group needs a group column
    broker.job("mail", 7, { deadLetter: { group: "mail.dead" } });
  });
});
