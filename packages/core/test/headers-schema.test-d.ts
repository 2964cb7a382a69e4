/**
 * The headers role and the schema option: both ways of describing a table give the same role
 * tuple; a second headers column is refused at compile time (and at run time); a schema keeps the
 * spec's type and is validated like any identifier.
 */
import { describe, expect, expectTypeOf, test } from "vitest";
import {
  InboxSpec,
  column,
  defineInbox,
  field,
  type Attempt,
  type CheckDefinition,
  type Lease,
  type MessageHeaders,
  type Payload,
  type RolesOf,
  type RowOf,
  type SpecError,
} from "../src/internal.js";
import { definition } from "./type-helpers.js";

describe("the headers role", () => {
  test("declared and by hand give the same role tuple", () => {
    const declared = defineInbox({
      table: "report_jobs",
      schema: "jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        lockedUntil: field.lease("locked_until"),
        headers: field.headers(),
        payload: field.payload<string>(),
      },
    });
    const byHand = InboxSpec.table("report_jobs", column("id").generated())
      .schema("jobs")
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"))
      .headers(column("headers"));
    expectTypeOf<RolesOf<typeof declared>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<string>, MessageHeaders]>();
    expectTypeOf<RolesOf<typeof byHand>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<unknown>, MessageHeaders]>();
    expect(declared.description.headers?.name).toBe("headers");
    expect(byHand.description.headers?.name).toBe("headers");
    expect(declared.description.schema).toBe("jobs");
    expect(byHand.description.schema).toBe("jobs");
  });

  test("a second headers column does not compile, in both forms", () => {
    const twice = definition({ table: "t", columns: { id: field.id(), headers: field.headers(), meta: field.headers() } });
    expectTypeOf<CheckDefinition<typeof twice>>().toEqualTypeOf<
      SpecError<"the headers role is played by two columns: a table has at most one headers column, so describe the others with field.data()">
    >();
    // @ts-expect-error the headers role is played by two columns
    expect(() => defineInbox({ table: "t", columns: { id: field.id(), headers: field.headers(), meta: field.headers() } })).toThrow(/the headers role is played by both/);
    expect(() =>
      InboxSpec.table("t", column("id"))
        .headers(column("headers"))
        // @ts-expect-error the headers role is already played by a column
        .headers(column("meta")),
    ).toThrow(/the headers role is played by both "headers" and "meta"/);
  });

  test("a row-mode row types the headers column as the driver reads it", () => {
    const spec = InboxSpec.table("t", column("id")).headers(column("meta"));
    expectTypeOf<RowOf<typeof spec>>().toEqualTypeOf<{ readonly id: unknown; readonly meta: Readonly<Record<string, string>> | string | null }>();
  });
});

describe("the schema option", () => {
  test("is validated like any identifier, at build time", () => {
    expect(() => InboxSpec.table("t", column("id")).schema("bad.name")).toThrow(/schema of table "t" name "bad.name" cannot be an identifier: a dot is not allowed/);
    expect(() => defineInbox({ table: "t", schema: "", columns: { id: field.id() } })).toThrow(/schema of table "t" name is empty/);
  });

  test("keeps the spec's type", () => {
    const plain = InboxSpec.table("t", column("id")).lease(column("locked_until"));
    expectTypeOf(plain.schema("jobs")).toEqualTypeOf(plain);
  });
});
