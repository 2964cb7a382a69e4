/** The compile-time rules of `maxInWork` and `rateLimit`: literal numbers the type system can judge, and a lease table's cap. */
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { describe, expectTypeOf, it } from "vitest";
import { InboxQueue } from "../../../src/index.js";

interface Job {
  readonly n: number;
}
const RowLock = InboxSpec.table("jobs", column("id")).payload(column("payload"), payloadOf<Job>());
const Leased = InboxSpec.table("jobs", column("id")).lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
const LeasedWithDelay = Leased.retryAfter(column("retry_after"));
const Advisory = InboxSpec.table("jobs", column("id")).data(column("k")).advisoryLock("{k}").payload(column("payload"), payloadOf<Job>());
declare const someCount: number;

describe("maxInWork", () => {
  it("takes a whole number above 0 on every form (a lease table with a retryAfter column)", () => {
    expectTypeOf(InboxQueue.of(RowLock, "jobs").maxInWork(5)).toEqualTypeOf<InboxQueue<typeof RowLock>>();
    expectTypeOf(InboxQueue.of(Advisory, "jobs").maxInWork(1)).toEqualTypeOf<InboxQueue<typeof Advisory>>();
    expectTypeOf(InboxQueue.of(LeasedWithDelay, "jobs").maxInWork(3)).toEqualTypeOf<InboxQueue<typeof LeasedWithDelay>>();
    // A number the compiler cannot see is checked when the queue is declared.
    expectTypeOf(InboxQueue.of(RowLock, "jobs").maxInWork(someCount)).toEqualTypeOf<InboxQueue<typeof RowLock>>();
  });

  it("refuses 0, a negative and a fraction", () => {
    // @ts-expect-error maxInWork takes a whole number of rows above 0
    InboxQueue.of(RowLock, "jobs").maxInWork(0);
    // @ts-expect-error maxInWork takes a whole number of rows above 0
    InboxQueue.of(RowLock, "jobs").maxInWork(-2);
    // @ts-expect-error maxInWork takes a whole number of rows above 0
    InboxQueue.of(Advisory, "jobs").maxInWork(1.5);
  });

  it("refuses a lease table without a retryAfter column (a delay there would count as work)", () => {
    // @ts-expect-error maxInWork on a lease table needs a retryAfter column
    InboxQueue.of(Leased, "jobs").maxInWork(5);
  });
});

describe("rateLimit", () => {
  it("takes a whole max and a window above 0", () => {
    expectTypeOf(InboxQueue.of(RowLock, "jobs").rateLimit({ max: 10, perMs: 1000 })).toEqualTypeOf<InboxQueue<typeof RowLock>>();
    expectTypeOf(InboxQueue.of(Leased, "jobs").rateLimit({ max: 1, perMs: 0.5 })).toEqualTypeOf<InboxQueue<typeof Leased>>();
    expectTypeOf(InboxQueue.of(Advisory, "jobs").rateLimit({ max: someCount, perMs: someCount })).toEqualTypeOf<InboxQueue<typeof Advisory>>();
  });

  it("refuses a non-positive window", () => {
    // @ts-expect-error rateLimit's perMs is a window above 0 ms
    InboxQueue.of(RowLock, "jobs").rateLimit({ max: 10, perMs: 0 });
    // @ts-expect-error rateLimit's perMs is a window above 0 ms
    InboxQueue.of(RowLock, "jobs").rateLimit({ max: 10, perMs: -1000 });
  });

  it("refuses a max of 0, a negative or a fraction", () => {
    // @ts-expect-error rateLimit's max is a whole number of starts above 0
    InboxQueue.of(Leased, "jobs").rateLimit({ max: 0, perMs: 1000 });
    // @ts-expect-error rateLimit's max is a whole number of starts above 0
    InboxQueue.of(Leased, "jobs").rateLimit({ max: -3, perMs: 1000 });
    // @ts-expect-error rateLimit's max is a whole number of starts above 0
    InboxQueue.of(Leased, "jobs").rateLimit({ max: 2.5, perMs: 1000 });
  });
});
