/**
 * Results and progress at the type level: `ctx.ack(result)` takes the result column's type and does
 * not compile without one; a result column needs processedAt (an ack that deletes the row would delete
 * its result); `ctx.progress(value)` takes the progress column's type, and does not compile without one
 * nor on a row-lock table (its claim holds the row in an open transaction, so no one else would see it).
 * A job's state carries `result` and `progress`, typed, where the table has those columns.
 */
import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, defineInbox, field, payloadOf, progressOf, resultOf } from "@sqlinbox/core";
import { HandlerOutcome, InboxQueue, SqlBroker, subscriber, type JobState } from "../../src/index.js";

interface Job {
  readonly n: number;
}
interface Report {
  readonly url: string;
}

const Base = InboxSpec.table("jobs", column("id").generated()).payload(column("payload"), payloadOf<Job>());
const Kept = Base.processedAt(column("processed_at"));
const RowLockResults = Kept.result(column("result"), resultOf<Report>());
const LeaseResults = Kept.lease(column("locked_until")).result(column("result"), resultOf<Report>()).progress(column("progress"), progressOf<number>());
const AdvisoryResults = Kept.data(column("k")).result(column("result"), resultOf<Report>()).progress(column("progress"), progressOf<number>()).advisoryLock("{k}");
const RowLockProgress = Kept.progress(column("progress"), progressOf<number>());

describe("a result column", () => {
  test("needs processedAt described before it", () => {
    // @ts-expect-error a result column needs a processedAt column: this table's ack deletes the row
    Base.result(column("result"));
    Kept.result(column("result"));
  });

  test("a result column is described once", () => {
    // @ts-expect-error the result role is already played by a column
    RowLockResults.result(column("other"));
  });
});

describe("the declarative form", () => {
  test("field.result<T>() and field.progress<T>() type the same as the builder", () => {
    const Declared = defineInbox({
      table: "jobs",
      columns: {
        id: field.id().generated(),
        lockedUntil: field.lease("locked_until"),
        payload: field.payload<Job>(),
        processedAt: field.processedAt("processed_at"),
        result: field.result<Report>(),
        progress: field.progress<number>(),
      },
    });
    subscriber(InboxQueue.of(Declared, "d"), async (_job, ctx) => {
      await ctx.progress(1);
      return ctx.ack({ url: "/r" });
    });
    // @ts-expect-error the result column holds a Report
    subscriber(InboxQueue.of(Declared, "d"), async (_job, ctx) => ctx.ack(1));
  });

  test("a result field without processedAt does not compile", () => {
    // @ts-expect-error a result column needs a processedAt column: describe one with field.processedAt()
    defineInbox({ table: "jobs", columns: { id: field.id().generated(), payload: field.payload<Job>(), result: field.result<Report>() } });
  });
});

describe("ctx.ack(result)", () => {
  test("takes the result column's type, on every form", () => {
    subscriber(InboxQueue.of(RowLockResults, "a"), async (job, ctx) => ctx.ack({ url: `/r/${job.n}` }));
    subscriber(InboxQueue.of(LeaseResults, "b"), async (job, ctx) => (job.n > 0 ? ctx.ack({ url: "/r" }) : HandlerOutcome.retry()));
    subscriber(InboxQueue.of(AdvisoryResults, "c"), async (_job, ctx) => ctx.ack({ url: "/r" }));
    // A plain ack still compiles: the result column stays empty.
    subscriber(InboxQueue.of(LeaseResults, "d"), async () => HandlerOutcome.ack());
  });

  test("a result of another type does not compile", () => {
    // @ts-expect-error the result column holds a Report
    subscriber(InboxQueue.of(LeaseResults, "b"), async (_job, ctx) => ctx.ack({ pages: 3 }));
  });

  test("a result on a table without a result column does not compile", () => {
    // @ts-expect-error ctx.ack(result) needs a result column
    subscriber(InboxQueue.of(Kept, "a"), async (_job, ctx) => ctx.ack({ url: "/r" }));
    // @ts-expect-error nor on a table whose ack deletes the row
    subscriber(InboxQueue.of(Base, "a"), async (_job, ctx) => ctx.ack("done"));
  });

  test("a batch handler gives one result per row through each row's context", () => {
    subscriber.batch(InboxQueue.of(LeaseResults, "b").batch(8), async (jobs, ctx) => jobs.map((job, i) => ctx.rows[i]?.ack({ url: `/r/${job.n}` })));
    // @ts-expect-error each row's result is typed by the column too
    subscriber.batch(InboxQueue.of(LeaseResults, "b").batch(8), async (jobs, ctx) => jobs.map((_job, i) => ctx.rows[i]?.ack(42)));
  });
});

describe("ctx.progress(value)", () => {
  test("takes the progress column's type on the lease and advisory forms", () => {
    subscriber(InboxQueue.of(LeaseResults, "b"), async (_job, ctx) => {
      await ctx.progress(0.5);
      // @ts-expect-error the progress column holds a number
      await ctx.progress("half");
    });
    subscriber(InboxQueue.of(AdvisoryResults, "c"), async (_job, ctx) => {
      await ctx.progress(0.5);
    });
  });

  test("does not compile on a row-lock table, nor without a progress column", () => {
    subscriber(InboxQueue.of(RowLockProgress, "a"), async (_job, ctx) => {
      // @ts-expect-error ctx.progress cannot show progress on a row-lock table: the claim holds the row in an open transaction
      await ctx.progress(0.5);
    });
    subscriber(InboxQueue.of(RowLockResults, "a"), async (_job, ctx) => {
      // @ts-expect-error ctx.progress needs a progress column
      await ctx.progress(0.5);
    });
  });
});

describe("a job's state", () => {
  test("carries result and progress, typed, where the table has them", async () => {
    const broker = SqlBroker.fromUrl("postgres://u@h/db").route(LeaseResults, "reports").route(Kept, "plain");
    const done = await broker.job("reports", "1").finished();
    if (done.state === "done") {
      expectTypeOf(done.result).toEqualTypeOf<Report | null>();
      expectTypeOf(done.progress).toEqualTypeOf<number | null>();
    }
    const plain = await broker.job("plain", "1").state();
    if (plain.state === "done") {
      // @ts-expect-error no result column: no result on the state
      void plain.result.url;
    }
    expectTypeOf<JobState<typeof LeaseResults>>().toMatchTypeOf<{ readonly state: string }>();
  });
});
