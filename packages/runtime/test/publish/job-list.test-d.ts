/**
 * Compile-time rules of `broker.jobs(route).list(…)`: only a route the broker's type knows; `done`
 * only on a table with a processedAt column; `key` only where the table has a dedup key or an order
 * key; `columns` only the table's data columns, with their types; each listed job is the state
 * `state()` reads, narrowed to the state asked for, with the route's payload.
 */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expectTypeOf, test } from "vitest";
import { SqlBroker, type JobList, type JobPage } from "../../src/index.js";

interface Report {
  readonly title: string;
}
const Reports = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .retryAfter(column("retry_after"))
  .processedAt(column("processed_at"))
  .group(column("grp"))
  .key(column("job_key"))
  .data(column("customer_id").holds<number>())
  .payload(column("payload"), payloadOf<Report>());
const Bare = InboxSpec.table("bare_jobs", column("id").generated()).payload(column("payload"), payloadOf<Report>());
const DeadReports = InboxSpec.table("dead_reports", column("id")).payload(column("payload"), payloadOf<Report>()).lastError(column("last_error"));
const broker = SqlBroker.fromUrl("postgres://u@h/db").route(Reports, "reports").route(Bare, "bare");

describe("broker.jobs(route).list", () => {
  test("a list is typed by its route's table, and a page by the state asked for", async () => {
    expectTypeOf(broker.jobs("reports")).toEqualTypeOf<JobList<typeof Reports>>();
    const page = await broker.jobs("reports").list({ state: "done", key: "k1", columns: { customer_id: 7 }, limit: 10, after: null });
    expectTypeOf(page).toEqualTypeOf<JobPage<typeof Reports, "done">>();
    expectTypeOf(page.next).toEqualTypeOf<string | null>();
    const done = page.jobs[0];
    if (done !== undefined) {
      expectTypeOf(done.state).toEqualTypeOf<"done">();
      expectTypeOf(done.processedAt).toEqualTypeOf<Date>();
      expectTypeOf(done.payload).toEqualTypeOf<Report>();
      expectTypeOf(done.runAt).toEqualTypeOf<Date | null>();
    }
    const waiting = (await broker.jobs("reports").list({ state: "waiting" })).jobs[0];
    if (waiting !== undefined) {
      expectTypeOf(waiting.state).toEqualTypeOf<"waiting">();
      expectTypeOf(waiting.leaseUntil).toEqualTypeOf<Date | null>();
      expectTypeOf(waiting.attempt).toEqualTypeOf<number>();
    }
    const dead = (await broker.jobs("reports", { deadLetter: DeadReports }).list({ state: "deadLettered" })).jobs[0];
    if (dead !== undefined) expectTypeOf(dead.lastError).toEqualTypeOf<string | null>();
    await broker.jobs("bare").list({ state: "running" });
  });

  test("what the table has no column for does not compile, nor a data column of another type", async () => {
    // @ts-expect-error this broker's type routes no such name
    broker.jobs("report");
    // @ts-expect-error done needs a processedAt column: this table deletes handled rows
    await broker.jobs("bare").list({ state: "done" });
    // @ts-expect-error list({ key }) needs a dedup key or an order key column
    await broker.jobs("bare").list({ state: "waiting", key: "k1" });
    // @ts-expect-error list({ columns }) filters on data columns: this table describes none
    await broker.jobs("bare").list({ state: "waiting", columns: { customer_id: 7 } });
    // @ts-expect-error not a data column of the table
    await broker.jobs("reports").list({ state: "waiting", columns: { account: 7 } });
    // @ts-expect-error a data column of another type
    await broker.jobs("reports").list({ state: "waiting", columns: { customer_id: "seven" } });
    // @ts-expect-error gone is no state a list pages through
    await broker.jobs("reports").list({ state: "gone" });
    // @ts-expect-error a list pages through one state
    await broker.jobs("reports").list({});
  });
});
