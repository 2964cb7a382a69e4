import { describe, expectTypeOf, test } from "vitest";
import {
  defineInbox,
  field,
  payloadOf,
  type AdvisoryLock,
  type AnyInboxSpec,
  type Attempt,
  type CheckDefinition,
  type Fifo,
  type Group,
  type Lease,
  type Payload,
  type RolesOf,
  type SpecError,
} from "../src/internal.js";
import { definition } from "./type-helpers.js";

interface Report {
  readonly title: string;
}

// Each rule is proven twice: `CheckDefinition` of the very definition equals the expected
// `SpecError`, and passing that definition (or the same literal) to `defineInbox` fails.
// The definition is otherwise valid, so the error can come from nothing else.

describe("defineInbox: what compiles", () => {
  test("the seed's description compiles and carries its role tuple", () => {
    const spec = defineInbox({
      table: "report_jobs",
      columns: {
        id: field.id().generated(),
        attempt: field.attempt().generated(),
        lockedUntil: field.lease("locked_until"),
        payload: field.payload<Report>(),
      },
    });
    expectTypeOf<RolesOf<typeof spec>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<Report>]>();
    expectTypeOf(spec.form).toEqualTypeOf<"lease">();
    expectTypeOf(spec).toExtend<AnyInboxSpec>();
  });

  test("bare fields (no .generated(), no name) keep their property key as the name", () => {
    // Regression: a bare field.id() used to take `string | undefined` as its name from the context,
    // so every column seemed to share every name and any advisory placeholder seemed described.
    const def = definition({ table: "t", columns: { id: field.id(), attempt: field.attempt(), customer_id: field.data() }, advisoryLock: "k-{customer_id}" });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<unknown>();
    defineInbox({ table: "t", columns: { id: field.id(), attempt: field.attempt(), customer_id: field.data() }, advisoryLock: "k-{customer_id}" });
  });

  test("form follows the roles", () => {
    expectTypeOf(defineInbox({ table: "t", columns: { id: field.id() } }).form).toEqualTypeOf<"rowLock">();
    expectTypeOf(defineInbox({ table: "t", columns: { id: field.id(), payload: field.payload() } }).form).toEqualTypeOf<"rowLock">();
    expectTypeOf(defineInbox({ table: "t", columns: { id: field.id(), l: field.lease() } }).form).toEqualTypeOf<"lease">();
    expectTypeOf(defineInbox({ table: "t", columns: { id: field.id() }, advisoryLock: "k-{id}" }).form).toEqualTypeOf<"advisory">();
  });

  test("a group with fifo, an advisory key by property key or by column name", () => {
    const fifo = defineInbox({ table: "t", columns: { id: field.id(), queue: field.group() }, fifo: true });
    expectTypeOf<RolesOf<typeof fifo>>().toEqualTypeOf<[Group, Fifo]>();
    const byKey = defineInbox({ table: "t", columns: { id: field.id(), customer: field.data("customer_id") }, advisoryLock: "r-{customer}" });
    expectTypeOf<RolesOf<typeof byKey>>().toEqualTypeOf<[AdvisoryLock<"r-{customer}">]>();
    const byName = defineInbox({ table: "t", columns: { id: field.id(), customer: field.data("customer_id") }, advisoryLock: "r-{customer_id}" });
    expectTypeOf(byName.form).toEqualTypeOf<"advisory">();
  });

  test("the payload's type comes from the type argument or from a marker", () => {
    const marked = defineInbox({ table: "t", columns: { id: field.id(), body: field.payload("body", payloadOf<Report>()) } });
    expectTypeOf<RolesOf<typeof marked>>().toEqualTypeOf<[Payload<Report>]>();
  });
});

describe("defineInbox: what does not compile, and why", () => {
  test("no id column", () => {
    const def = definition({ table: "t", columns: { attempt: field.attempt() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<SpecError<"no id column is described: add one with field.id()">>();
    // @ts-expect-error no id column is described
    defineInbox(def);
    // @ts-expect-error no id column is described
    defineInbox({ table: "t", columns: { attempt: field.attempt() } });
  });

  test("a role set twice", () => {
    const def = definition({ table: "t", columns: { id: field.id(), attempt: field.attempt(), tries: field.attempt() } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<
      SpecError<"the attempt role is played by two columns: a table has at most one attempt column, so describe the others with field.data()">
    >();
    // @ts-expect-error the attempt role is played by two columns
    defineInbox(def);
    // @ts-expect-error the attempt role is played by two columns
    defineInbox({ table: "t", columns: { id: field.id(), attempt: field.attempt(), tries: field.attempt() } });

    const twoIds = definition({ table: "t", columns: { id: field.id(), uuid: field.id() } });
    expectTypeOf<CheckDefinition<typeof twoIds>>().toEqualTypeOf<
      SpecError<"the id role is played by two columns: a table has at most one id column, so describe the others with field.data()">
    >();
  });

  test("a column named twice", () => {
    const def = definition({ table: "t", columns: { id: field.id(), a: field.data("x"), b: field.data("x") } });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<SpecError<'column "x" is described twice: describe each column once'>>();
    // @ts-expect-error column "x" is described twice
    defineInbox(def);

    // a key that is also another field's column name
    const clash = definition({ table: "t", columns: { id: field.id(), payload: field.payload(), body: field.data("payload") } });
    expectTypeOf<CheckDefinition<typeof clash>>().toEqualTypeOf<SpecError<'column "payload" is described twice: describe each column once'>>();
    // @ts-expect-error column "payload" is described twice
    defineInbox({ table: "t", columns: { id: field.id(), payload: field.payload(), body: field.data("payload") } });
  });

  test("a lease column with an advisory key", () => {
    const def = definition({ table: "t", columns: { id: field.id(), lockedUntil: field.lease("locked_until") }, advisoryLock: "k-{id}" });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<
      SpecError<"a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both">
    >();
    // @ts-expect-error a lease column and an advisory key exclude each other
    defineInbox(def);
  });

  test("fifo without a group", () => {
    const def = definition({ table: "t", columns: { id: field.id() }, fifo: true });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<SpecError<"fifo needs a group column: describe one with field.group(), or drop fifo">>();
    // @ts-expect-error fifo needs a group column
    defineInbox(def);
  });

  test("fifo with an advisory key", () => {
    const def = definition({ table: "t", columns: { id: field.id(), queue: field.group() }, fifo: true, advisoryLock: "k-{id}" });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<
      SpecError<"fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them">
    >();
    // @ts-expect-error fifo and an advisory key exclude each other
    defineInbox(def);
  });

  test("an advisory key naming a column that is not described", () => {
    const def = definition({ table: "t", columns: { id: field.id() }, advisoryLock: "report-{customer_id}" });
    expectTypeOf<CheckDefinition<typeof def>>().toEqualTypeOf<
      SpecError<"the advisory key names a column that is not described: describe customer_id (as field.data() if it plays no role)">
    >();
    // @ts-expect-error the advisory key names a column that is not described
    defineInbox(def);
    // @ts-expect-error the advisory key names a column that is not described
    defineInbox({ table: "t", columns: { id: field.id() }, advisoryLock: "report-{customer_id}" });
  });
});
