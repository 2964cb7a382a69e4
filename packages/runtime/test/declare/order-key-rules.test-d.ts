import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { InboxQueue } from "../../src/index.js";

interface Entry {
  readonly cents: number;
}
const Ordered = InboxSpec.table("ledger_jobs", column("id").generated())
  .lease(column("locked_until"))
  .orderKey(column("account_id"))
  .payload(column("payload"), payloadOf<Entry>());
const Grouped = InboxSpec.table("group_jobs", column("id").generated()).group(column("grp")).payload(column("payload"), payloadOf<Entry>());
const Plain = InboxSpec.table("plain_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Entry>());
const Advisory = InboxSpec.table("keyed_jobs", column("id").generated()).group(column("grp")).data(column("k")).advisoryLock("{k}").payload(column("payload"), payloadOf<Entry>());

type ArgOf<Q extends { maxInWorkPerKey(...args: never[]): unknown }> = Parameters<Q["maxInWorkPerKey"]>[0];

describe("maxInWorkPerKey", () => {
  test("takes a count with an order key or a group", () => {
    expectTypeOf<ArgOf<InboxQueue<typeof Ordered>>>().toEqualTypeOf<number>();
    expectTypeOf<ArgOf<InboxQueue<typeof Grouped>>>().toEqualTypeOf<number>();
    InboxQueue.of(Ordered, "ledger").workers(4).maxInWorkPerKey(2);
  });

  test("without an order key or a group is the sentence that says what to describe", () => {
    expectTypeOf<ArgOf<InboxQueue<typeof Plain>>>().toEqualTypeOf<
      import("@sqlinbox/core/internal").SpecError<"maxInWorkPerKey needs an order key or a group column: describe one with field.orderKey(…) or .orderKey(column(…)); without one there is no key to count rows by">
    >();
    // @ts-expect-error maxInWorkPerKey needs an order key or a group column
    InboxQueue.of(Plain, "plain").maxInWorkPerKey(2);
  });

  test("on an advisory table (even with a group) is refused: its key lock already runs one row of a key at a time", () => {
    expectTypeOf<ArgOf<InboxQueue<typeof Advisory>>>().toEqualTypeOf<
      import("@sqlinbox/core/internal").SpecError<"maxInWorkPerKey needs a lease or row-lock table: an advisory key already runs the rows that share it one at a time, so drop maxInWorkPerKey or describe a lease column instead of the advisory key">
    >();
    // @ts-expect-error maxInWorkPerKey needs a lease or row-lock table
    InboxQueue.of(Advisory, "keyed").maxInWorkPerKey(2);
  });
});
