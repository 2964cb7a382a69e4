import { describe, expectTypeOf, test } from "vitest";
import { column, defineInbox, field, payloadOf, InboxSpec, type AdvisoryLock, type Attempt, type Lease, type Payload, type RolesOf } from "../src/internal.js";

interface Report {
  readonly title: string;
}

describe("both forms give the same type", () => {
  test("the seed's table: [Attempt, Lease<Date>, Payload<Report>], lease form", () => {
    const byHand = InboxSpec.table("report_jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"), payloadOf<Report>());
    const declared = defineInbox({
      table: "report_jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        locked_until: field.lease(),
        payload: field.payload<Report>(),
      },
    });
    expectTypeOf<RolesOf<typeof byHand>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<Report>]>();
    expectTypeOf<RolesOf<typeof declared>>().toEqualTypeOf<RolesOf<typeof byHand>>();
    // with the same column names, the whole spec type is the same
    expectTypeOf(declared).toEqualTypeOf(byHand);
    expectTypeOf(declared.form).toEqualTypeOf<"lease">();
    expectTypeOf(byHand.form).toEqualTypeOf<"lease">();
  });

  test("an advisory table", () => {
    const byHand = InboxSpec.table("report_jobs", column("id")).data(column("customer_id")).advisoryLock("report-{customer_id}");
    const declared = defineInbox({ table: "report_jobs", columns: { id: field.id(), customer_id: field.data() }, advisoryLock: "report-{customer_id}" });
    expectTypeOf<RolesOf<typeof declared>>().toEqualTypeOf<[AdvisoryLock<"report-{customer_id}">]>();
    expectTypeOf(declared).toEqualTypeOf(byHand);
    expectTypeOf(declared.form).toEqualTypeOf<"advisory">();
  });

  test("a row-lock table", () => {
    const byHand = InboxSpec.table("report_jobs", column("id")).attempt(column("attempt"));
    const declared = defineInbox({ table: "report_jobs", columns: { id: field.id(), attempt: field.attempt() } });
    expectTypeOf(declared).toEqualTypeOf(byHand);
    expectTypeOf(declared.form).toEqualTypeOf<"rowLock">();
  });
});
