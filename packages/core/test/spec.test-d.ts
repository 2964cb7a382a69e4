import { describe, expectTypeOf, test } from "vitest";
import { column, payloadOf, InboxSpec, type Attempt, type Lease, type Payload, type RolesOf } from "../src/index.js";

interface Report { readonly title: string }

describe("InboxSpec by hand", () => {
  test("the seed's description compiles and carries its role tuple", () => {
    const spec = InboxSpec.table("report_jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"), payloadOf<Report>());
    expectTypeOf<RolesOf<typeof spec>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<Report>]>();
    const typed: InboxSpec<[Attempt, Lease<Date>, Payload<Report>], "id" | "attempt" | "locked_until" | "payload"> = spec;
    void typed;
    expectTypeOf(spec.form).toEqualTypeOf<"lease">();
  });

  test("a role set twice does not compile", () => {
    InboxSpec.table("t", column("id"))
      .attempt(column("a"))
      // @ts-expect-error the attempt role is already played by a column
      .attempt(column("b"));
  });

  test("a column named twice does not compile", () => {
    InboxSpec.table("t", column("id"))
      .attempt(column("n"))
      // @ts-expect-error column "n" is already described
      .payload(column("n"));
  });
});
