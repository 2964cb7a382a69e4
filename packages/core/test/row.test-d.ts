import { describe, expectTypeOf, test } from "vitest";
import { column, defineInbox, field, payloadOf, InboxSpec, type Attempt, type Lease, type Payload, type PayloadOf, type RolesOf, type RowOf } from "../src/internal.js";

interface Report {
  readonly title: string;
}

// What a row-mode handler receives: every described column under its key, role columns typed by
// their role, id and data columns by what their description says they hold.
describe("the row of a table without a payload column", () => {
  test("by hand: role columns by role, data columns by .holds<T>()", () => {
    const spec = InboxSpec.table("exports", column("id").generated().holds<number>())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .priority(column("priority"))
      .data(column("customer_id").holds<string>())
      .data(column("note"));
    expectTypeOf<RowOf<typeof spec>>().toEqualTypeOf<{
      readonly id: number;
      readonly attempt: number;
      readonly locked_until: Date | string | null;
      readonly priority: number;
      readonly customer_id: string;
      readonly note: unknown;
    }>();
    expectTypeOf<PayloadOf<RolesOf<typeof spec>>>().toBeNever();
  });

  test("declaratively: field.id<T>(), field.data<T>(), .holds<T>() on a renamed column; keys are property keys", () => {
    const spec = defineInbox({
      table: "exports",
      columns: {
        id: field.id<number>().generated(),
        attempt: field.attempt().generated(),
        lockedUntil: field.lease("locked_until"),
        runAt: field.retryAfter("run_at"),
        doneAt: field.processedAt("done_at"),
        queue: field.group(),
        customer_id: field.data<string>(),
        amount: field.data("amount_cents").holds<number>(),
      },
    });
    expectTypeOf<RowOf<typeof spec>>().toEqualTypeOf<{
      readonly id: number;
      readonly attempt: number;
      readonly lockedUntil: Date | string | null;
      readonly runAt: Date | string | null;
      readonly doneAt: Date | string | null;
      readonly queue: string;
      readonly customer_id: string;
      readonly amount: number;
    }>();
    expectTypeOf<PayloadOf<RolesOf<typeof spec>>>().toBeNever();
  });

  test("both forms give the same row type for the same columns", () => {
    const byHand = InboxSpec.table("t", column("id").holds<number>()).attempt(column("attempt")).data(column("customer_id").holds<string>());
    const declared = defineInbox({ table: "t", columns: { id: field.id<number>(), attempt: field.attempt(), customer_id: field.data<string>() } });
    expectTypeOf<RowOf<typeof declared>>().toEqualTypeOf<RowOf<typeof byHand>>();
    expectTypeOf(declared).toEqualTypeOf(byHand);
  });

  test("with a payload column, PayloadOf is the payload's type, not the row", () => {
    const spec = InboxSpec.table("t", column("id")).payload(column("payload"), payloadOf<Report>());
    expectTypeOf<PayloadOf<RolesOf<typeof spec>>>().toEqualTypeOf<Report>();
    expectTypeOf<PayloadOf<[Attempt, Lease<Date>, Payload<Report>]>>().toEqualTypeOf<Report>();
    expectTypeOf<PayloadOf<[Attempt, Lease<Date>]>>().toBeNever();
    expectTypeOf<PayloadOf<[]>>().toBeNever();
  });
});
