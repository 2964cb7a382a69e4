/**
 * The retention rule at compile time: `retain({ done })` only on a table that keeps handled rows
 * (a processedAt column); on one whose ack deletes the row it does not compile, and the message says why.
 */
import { describe, expectTypeOf, test } from "vitest";
import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { InboxQueue, days, hours, type RetainArg } from "../../src/index.js";

interface Report {
  readonly id: string;
}

const Deleting = InboxSpec.table("report_jobs", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Report>());
const Keeping = Deleting.processedAt(column("processed_at"));
const Dead = InboxSpec.table("dead_reports", column("id").generated()).payload(column("payload"), payloadOf<Report>()).processedAt(column("dead_at"));

describe("retain", () => {
  test("done and deadLettered compile on a table that keeps handled rows", () => {
    expectTypeOf(
      InboxQueue.of(Keeping, "reports")
        .deadLetter(Dead)
        .retain({ done: hours(24), deadLettered: days(30) }),
    ).toEqualTypeOf<InboxQueue<typeof Keeping>>();
  });

  test("done does not compile on a table whose ack deletes the row, and the message says what to do", () => {
    // @ts-expect-error retain({ done }) needs a processedAt column
    InboxQueue.of(Deleting, "reports").retain({ done: hours(24) });
    expectTypeOf<RetainArg<typeof Deleting>["done"]>().toEqualTypeOf<
      | import("@sqlinbox/core/internal").SpecError<"retain({ done }) needs a processedAt column: this table's ack deletes the row, so no handled row is kept to prune; describe one with field.processedAt(), or drop done">
      | undefined
    >();
    // deadLettered alone is judged by the dead-letter table (when the queue is declared or the app starts).
    InboxQueue.of(Deleting, "reports")
      .deadLetter(Dead)
      .retain({ deadLettered: days(30) });
  });
});
