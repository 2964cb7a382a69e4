import { sql, type Transaction } from "kysely";
import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import type { SpecError } from "@sqlinbox/core/internal";
import { HandlerOutcome, InboxQueue, keys, subscriber } from "../../src/index.js";

interface Report {
  readonly title: string;
}
interface AppDb {
  audit: { id: number; title: string };
}
const Leased = InboxSpec.table("report_jobs", column("id").generated())
  .attempt(column("attempt").generated())
  .lease(column("locked_until"))
  .payload(column("payload"), payloadOf<Report>());
const RowLock = InboxSpec.table("locked_jobs", column("id")).attempt(column("attempt")).payload(column("payload"), payloadOf<Report>());
const Advisory = InboxSpec.table("keyed_jobs", column("id")).data(column("k")).advisoryLock("{k}").payload(column("payload"), payloadOf<Report>());

describe("ctx.tx", () => {
  test("outside transactional mode is the sentence that says to add .transactional(), and no use of it compiles", () => {
    subscriber(InboxQueue.of(Leased, "reports"), async (_report, ctx) => {
      expectTypeOf(ctx.tx).toEqualTypeOf<SpecError<"ctx.tx needs a transactional queue: add .transactional() to the queue (InboxQueue.of(…).transactional<DB>())">>();
      // @ts-expect-error ctx.tx needs a transactional queue
      await ctx.tx.insertInto("audit").values({ id: 1, title: "t" }).execute();
      // @ts-expect-error ctx.tx needs a transactional queue
      await sql`select 1`.execute(ctx.tx);
    });
  });

  test("is a Transaction typed by the DB the queue names", () => {
    subscriber(InboxQueue.of(RowLock, "locked").transactional<AppDb>(), async (report, ctx) => {
      expectTypeOf(ctx.tx).toEqualTypeOf<Transaction<AppDb>>();
      expectTypeOf(ctx.get(keys.attempt)).toEqualTypeOf<number>();
      await ctx.tx.insertInto("audit").values({ id: 1, title: report.title }).execute();
      // @ts-expect-error no such table in AppDb
      ctx.tx.insertInto("nope");
      return HandlerOutcome.ack();
    });
  });

  test("without a DB the transaction is Transaction<unknown>, in every form", () => {
    subscriber(InboxQueue.of(Leased, "a").transactional(), async (_report, ctx) => {
      expectTypeOf(ctx.tx).toEqualTypeOf<Transaction<unknown>>();
    });
    subscriber(InboxQueue.of(Advisory, "b").transactional(), async (_report, ctx) => {
      expectTypeOf(ctx.tx).toEqualTypeOf<Transaction<unknown>>();
    });
  });

  test("the queue's other setters keep transactional mode", () => {
    subscriber(InboxQueue.of(Leased, "reports").transactional<AppDb>().workers(2).batch(4).lease(60_000).pollInterval(100), async (_report, ctx) => {
      expectTypeOf(ctx.tx).toEqualTypeOf<Transaction<AppDb>>();
    });
  });
});

describe("the rules on batches and transactions", () => {
  test("a batch handler takes every payload and returns one outcome per row, or one for all", () => {
    subscriber.batch(InboxQueue.of(Leased, "reports").batch(16), async (reports, ctx) => {
      expectTypeOf(reports).toEqualTypeOf<readonly Report[]>();
      expectTypeOf(ctx.rows[0]!.get(keys.attempt)).toEqualTypeOf<number>();
      return reports.map(() => HandlerOutcome.ack());
    });
    subscriber.batch(InboxQueue.of(RowLock, "locked").batch(16), async () => HandlerOutcome.retry());
  });

  test("a batch handler cannot be transactional", () => {
    // @ts-expect-error a batch handler cannot be transactional
    subscriber.batch(InboxQueue.of(RowLock, "locked").transactional(), async () => HandlerOutcome.ack());
  });

  test("a batch handler has no ctx.tx", () => {
    subscriber.batch(InboxQueue.of(RowLock, "locked"), async (_reports, ctx) => {
      // @ts-expect-error a batch context has no tx
      void ctx.tx;
    });
  });

  test("sharedTransaction() needs a row-lock table", () => {
    InboxQueue.of(RowLock, "locked").batch(8).sharedTransaction();
    // @ts-expect-error sharedTransaction() needs a row-lock table
    InboxQueue.of(Leased, "reports").sharedTransaction();
    // @ts-expect-error sharedTransaction() needs a row-lock table
    InboxQueue.of(Advisory, "keyed").sharedTransaction();
  });

  test("transactional() and sharedTransaction() exclude each other", () => {
    // @ts-expect-error transactional() and sharedTransaction() exclude each other
    InboxQueue.of(RowLock, "locked").sharedTransaction().transactional();
    // @ts-expect-error transactional() and sharedTransaction() exclude each other
    InboxQueue.of(RowLock, "locked").transactional().sharedTransaction();
  });

  test("a shared transaction's handler has no ctx.tx", () => {
    subscriber(InboxQueue.of(RowLock, "locked").sharedTransaction(), async (_report, ctx) => {
      // @ts-expect-error ctx.tx needs a transactional queue
      ctx.tx.selectFrom("audit");
    });
  });
});
