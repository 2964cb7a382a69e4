import { describe, expectTypeOf, test } from "vitest";
import {
  column,
  defineInbox,
  field,
  InboxSpec,
  type Attempt,
  type CheckDefinition,
  type DedupKey,
  type Payload,
  type PortableType,
  type RolesOf,
  type RowOf,
  type SpecError,
} from "../src/internal.js";
import type { ErrorMessage } from "./type-helpers.js";
import { definition } from "./type-helpers.js";

const base = InboxSpec.table("jobs", column("id").generated());

describe("types and the dedup key: what compiles", () => {
  test("both forms give the same type with a typed data column and a key", () => {
    const byHand = InboxSpec.table("jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .payload(column("payload"))
      .data(column("customer_id").holds<number>().type("bigint"))
      .key(column("job_key"));
    const declared = defineInbox({
      table: "jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        payload: field.payload(),
        customer_id: field.data<number>().type("bigint"),
        job_key: field.key(),
      },
    });
    expectTypeOf<RolesOf<typeof byHand>>().toEqualTypeOf<[Attempt, Payload<unknown>, DedupKey]>();
    expectTypeOf(declared).toEqualTypeOf(byHand);
    expectTypeOf<RowOf<typeof byHand>>().toEqualTypeOf<{
      readonly id: unknown;
      readonly attempt: number;
      readonly payload: unknown;
      readonly customer_id: number;
      readonly job_key: string | null;
    }>();
  });

  test("a named data column typed for handlers and for the table: name, then holds, then type", () => {
    const spec = defineInbox({ table: "jobs", columns: { id: field.id(), customerId: field.data("customer_id").holds<number>().type("bigint") } });
    expectTypeOf<RowOf<typeof spec>>().toEqualTypeOf<{ readonly id: unknown; readonly customerId: number }>();
    // A type argument and a name together leave the name to its default: TypeScript infers none of a call's type arguments once one is given.
    // @ts-expect-error "customer_id" is not assignable to undefined
    field.data<number>("customer_id");
  });

  test(".type(…) takes the portable types only", () => {
    expectTypeOf(column("n").type).parameter(0).toEqualTypeOf<PortableType>();
    // @ts-expect-error not a portable type
    column("n").type("varchar(10)");
    // @ts-expect-error not a portable type
    field.data("n").type("money");
  });

  test("an id and a data column take a type; the rules are quiet", () => {
    expectTypeOf<ErrorMessage<Parameters<typeof base.key<"job_key">>[0]>>().toEqualTypeOf<"no error">();
    InboxSpec.table("jobs", column("id").type("text")).data(column("n").type("double"));
    defineInbox({ table: "jobs", columns: { id: field.id<string>().type("text"), n: field.data().type("json") } });
  });
});

describe("types and the dedup key: what does not compile, and why", () => {
  test("the key role set twice, by hand and declared", () => {
    const keyed = base.key(column("a"));
    expectTypeOf<
      ErrorMessage<Parameters<typeof keyed.key<"b">>[0]>
    >().toEqualTypeOf<"the key role is already played by a column: a table has at most one key column, so describe this one with .data(…) or drop it">();
    // @ts-expect-error the key role is already played by a column
    keyed.key(column("b"));

    const def = definition({ table: "t", columns: { id: field.id(), a: field.key(), b: field.key() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<
      SpecError<"the key role is played by two columns: a table has at most one key column, so describe the others with field.data()">
    >();
    // @ts-expect-error the key role is played by two columns
    defineInbox(def);
  });

  test("a key column named like another column", () => {
    const spec = base.data(column("k"));
    expectTypeOf<ErrorMessage<Parameters<typeof spec.key<"k">>[0]>>().toEqualTypeOf<'column "k" is already described: describe each column once'>();
    // @ts-expect-error column "k" is already described
    spec.key(column("k"));
  });

  test("a type on a role whose type the role fixes, by hand", () => {
    expectTypeOf<
      ErrorMessage<Parameters<typeof base.lease<"locked_until", "timestamp">>[0]>
    >().toEqualTypeOf<"the lease column's type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)">();
    // @ts-expect-error the lease column's type is fixed by its role
    base.lease(column("locked_until").type("timestamp"));
    // @ts-expect-error the attempt column's type is fixed by its role
    base.attempt(column("attempt").type("integer"));
    // @ts-expect-error the key column's type is fixed by its role
    base.key(column("job_key").type("text"));
    // @ts-expect-error the payload column's type is fixed by its role
    base.payload(column("payload").type("bytes"));
  });

  test("a type on a role whose type the role fixes, declared: the member's argument is the error, and it still returns the field", () => {
    expectTypeOf<
      ErrorMessage<Parameters<ReturnType<typeof field.lease>["type"]>[0]>
    >().toEqualTypeOf<"the lease column's type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)">();
    expectTypeOf<
      ErrorMessage<Parameters<ReturnType<typeof field.key>["type"]>[0]>
    >().toEqualTypeOf<"the key column's type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)">();
    // @ts-expect-error the lease column's type is fixed by its role
    field.lease().type("timestamp");
    // @ts-expect-error the key column's type is fixed by its role
    field.key().type("text");
    // What it returns is the field, not `any`, so the definition around it breaks no other rule: the
    // compiler's first error is the sentence above, not "the ${any} role is played by two columns".
    expectTypeOf<ReturnType<ReturnType<typeof field.lease<"locked_until">>["type"]>>().toEqualTypeOf<ReturnType<typeof field.lease<"locked_until">>>();
    const typed = definition({
      table: "t",
      // @ts-expect-error the lease column's type is fixed by its role
      columns: { id: field.id(), lockedUntil: field.lease("locked_until").type("timestamp") },
    });
    expectTypeOf<ErrorMessage<CheckDefinition<typeof typed>>>().toEqualTypeOf<"no error">();
  });
});
