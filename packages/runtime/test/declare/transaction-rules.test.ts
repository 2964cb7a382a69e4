/** The rules on transactions and batches at run time (for callers the compiler did not check), and how batch outcomes are read. */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expect, it } from "vitest";
import { batchOutcomes } from "../../src/consume/batch-delivery.js";
import { HandlerOutcome, InboxQueue, subscriber } from "../../src/index.js";

const RowLock = InboxSpec.table("locked_jobs", column("id")).payload(column("payload"), payloadOf<{ n: number }>());
const Leased = InboxSpec.table("leased_jobs", column("id")).lease(column("locked_until")).payload(column("payload"), payloadOf<{ n: number }>());

/** Calls a method the types refuse, as an untyped caller would. */
const untyped = (queue: unknown, method: string): unknown => (queue as Record<string, () => unknown>)[method]?.call(queue);

describe("refused at run time", () => {
  it("sharedTransaction() on a lease table", () => {
    expect(() => untyped(InboxQueue.of(Leased, "leased"), "sharedTransaction")).toThrow(/^Declaration: sharedTransaction\(\) needs a row-lock table/);
  });

  it("transactional() and sharedTransaction() together, in either order", () => {
    expect(() => untyped(InboxQueue.of(RowLock, "locked").sharedTransaction(), "transactional")).toThrow(/^Declaration: transactional\(\) and sharedTransaction\(\) exclude/);
    expect(() => untyped(InboxQueue.of(RowLock, "locked").transactional(), "sharedTransaction")).toThrow(/^Declaration: transactional\(\) and sharedTransaction\(\) exclude/);
  });

  it("a transactional batch handler", () => {
    const queue = InboxQueue.of(RowLock, "locked").transactional() as unknown as InboxQueue<typeof RowLock>;
    expect(() => subscriber.batch(queue, async () => HandlerOutcome.ack())).toThrow(/^Declaration: a batch handler cannot be transactional/);
  });

  it("the options say what was declared", () => {
    expect(InboxQueue.of(RowLock, "locked").batch(8).sharedTransaction().options).toMatchObject({ batch: 8, sharedTransaction: true });
    expect(InboxQueue.of(Leased, "leased").transactional().workers(2).options).toMatchObject({ workers: 2, transactional: true });
  });
});

describe("batchOutcomes", () => {
  const place = { subscription: "locked", table: "locked_jobs" };
  it("one outcome for all, or nothing: ack for all", () => {
    expect(batchOutcomes(HandlerOutcome.retry(), 3, place)).toEqual([HandlerOutcome.retry(), HandlerOutcome.retry(), HandlerOutcome.retry()]);
    expect(batchOutcomes(undefined, 2, place)).toEqual([HandlerOutcome.ack(), HandlerOutcome.ack()]);
  });

  it("one per row, in order; nothing in a slot is an ack", () => {
    expect(batchOutcomes([HandlerOutcome.drop(), undefined], 2, place)).toEqual([HandlerOutcome.drop(), HandlerOutcome.ack()]);
  });

  it("a wrong count fails the whole batch", () => {
    expect(() => batchOutcomes([HandlerOutcome.ack()], 2, place)).toThrow(/^Handler: a batch handler returned 1 outcomes for 2 rows/);
  });
});
