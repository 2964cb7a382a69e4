import { describe, expectTypeOf, test } from "vitest";
import {
  column,
  payloadOf,
  InboxSpec,
  type AdvisoryLock,
  type AnyInboxSpec,
  type Attempt,
  type Fifo,
  type Group,
  type Lease,
  type Payload,
  type Priority,
  type ProcessedAt,
  type RetryAfter,
  type RolesOf,
  type RowOf,
} from "../src/internal.js";
import type { ErrorMessage } from "./type-helpers.js";

interface Report {
  readonly title: string;
}

const base = InboxSpec.table("report_jobs", column("id").generated());

describe("InboxSpec by hand: what compiles", () => {
  test("the seed's description compiles and carries its role tuple", () => {
    const spec = InboxSpec.table("report_jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"), payloadOf<Report>());
    expectTypeOf<RolesOf<typeof spec>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<Report>]>();
    const typed: InboxSpec<[Attempt, Lease<Date>, Payload<Report>], "id" | "attempt" | "locked_until" | "payload"> = spec;
    void typed;
    expectTypeOf(spec.form).toEqualTypeOf<"lease">();
    expectTypeOf<RowOf<typeof spec>>().toEqualTypeOf<{
      readonly id: unknown;
      readonly attempt: number;
      readonly locked_until: Date | string | null;
      readonly payload: unknown;
    }>();
  });

  test("the README's annotation compiles as written: the role tuple alone, columns left open", () => {
    const RenderReport: InboxSpec<[Attempt, Lease<Date>, Payload<Report>]> = InboxSpec.table("report_jobs", column("id").generated())
      .attempt(column("attempt").generated())
      .lease(column("locked_until"))
      .payload(column("payload"), payloadOf<Report>());
    expectTypeOf<RolesOf<typeof RenderReport>>().toEqualTypeOf<[Attempt, Lease<Date>, Payload<Report>]>();
    expectTypeOf(RenderReport).toExtend<AnyInboxSpec>();
    // the annotation keeps the roles honest: another tuple does not fit
    // @ts-expect-error a lease spec is not a row-lock spec with a payload only
    const wrong: InboxSpec<[Payload<Report>]> = RenderReport;
    void wrong;
  });

  test("every spec is an AnyInboxSpec, whatever rules its methods carry", () => {
    expectTypeOf(base).toExtend<AnyInboxSpec>();
    expectTypeOf(base.attempt(column("attempt")).lease(column("locked_until"))).toExtend<AnyInboxSpec>();
    expectTypeOf(base.group(column("g")).fifo()).toExtend<AnyInboxSpec>();
    expectTypeOf(base.data(column("customer_id")).advisoryLock("report-{customer_id}")).toExtend<AnyInboxSpec>();
  });

  test("form follows the roles: rowLock by default, lease with a lease column, advisory with a key", () => {
    expectTypeOf(base.form).toEqualTypeOf<"rowLock">();
    expectTypeOf(base.payload(column("payload")).form).toEqualTypeOf<"rowLock">();
    expectTypeOf(base.lease(column("locked_until")).form).toEqualTypeOf<"lease">();
    expectTypeOf(base.advisoryLock("report-{id}").form).toEqualTypeOf<"advisory">();
  });

  test("the valid combinations compile and list their roles in call order", () => {
    const grouped = base.group(column("queue")).fifo().priority(column("priority")).retryAfter(column("run_at")).processedAt(column("done_at"));
    expectTypeOf<RolesOf<typeof grouped>>().toEqualTypeOf<[Group, Fifo, Priority, RetryAfter, ProcessedAt]>();
    const advisory = base.data(column("customer_id")).advisoryLock("report-{customer_id}-{id}");
    expectTypeOf<RolesOf<typeof advisory>>().toEqualTypeOf<[AdvisoryLock<"report-{customer_id}-{id}">]>();
    expectTypeOf(base.payload(column("payload"))).toEqualTypeOf<InboxSpec<[Payload<unknown>], "id" | "payload">>();
  });

  test("the rules are quiet while they hold", () => {
    expectTypeOf<ErrorMessage<Parameters<typeof base.attempt<"attempt">>[0]>>().toEqualTypeOf<"no error">();
    expectTypeOf<ErrorMessage<Parameters<typeof base.lease<"locked_until">>[0]>>().toEqualTypeOf<"no error">();
    expectTypeOf<ErrorMessage<Parameters<typeof base.advisoryLock<"k-{id}">>[0]>>().toEqualTypeOf<"no error">();
    const grouped = base.group(column("queue"));
    expectTypeOf<ErrorMessage<ThisParameterType<typeof grouped.fifo>>>().toEqualTypeOf<"no error">();
  });
});

describe("InboxSpec by hand: what does not compile, and why", () => {
  test("a role set twice", () => {
    const spec = base.attempt(column("a"));
    expectTypeOf<
      ErrorMessage<Parameters<typeof spec.attempt<"b">>[0]>
    >().toEqualTypeOf<"the attempt role is already played by a column: a table has at most one attempt column, so describe this one with .data(…) or drop it">();
    // @ts-expect-error the attempt role is already played by a column
    spec.attempt(column("b"));

    const leased = base.lease(column("l1"));
    expectTypeOf<
      ErrorMessage<Parameters<typeof leased.lease<"l2">>[0]>
    >().toEqualTypeOf<"the lease role is already played by a column: a table has at most one lease column, so describe this one with .data(…) or drop it">();
    // @ts-expect-error the lease role is already played by a column
    leased.lease(column("l2"));

    const keyed = base.advisoryLock("a-{id}");
    expectTypeOf<
      ErrorMessage<Parameters<typeof keyed.advisoryLock<"b-{id}">>[0]>
    >().toEqualTypeOf<"the advisory key is already set: a table has one key template, so call .advisoryLock(…) once">();
    // @ts-expect-error the advisory key is already set
    keyed.advisoryLock("b-{id}");

    const fifo = base.group(column("g")).fifo();
    expectTypeOf<ErrorMessage<ThisParameterType<typeof fifo.fifo>>>().toEqualTypeOf<"fifo is already set: call .fifo() once">();
    // @ts-expect-error fifo is already set
    fifo.fifo();
  });

  test("a column named twice", () => {
    const spec = base.attempt(column("n"));
    expectTypeOf<ErrorMessage<Parameters<typeof spec.payload<"n">>[0]>>().toEqualTypeOf<'column "n" is already described: describe each column once'>();
    // @ts-expect-error column "n" is already described
    spec.payload(column("n"));

    expectTypeOf<ErrorMessage<Parameters<typeof base.data<"id">>[0]>>().toEqualTypeOf<'column "id" is already described: describe each column once'>();
    // @ts-expect-error column "id" is already described (as the id)
    base.data(column("id"));
  });

  test("a role set twice on a name already described reports the role, not never", () => {
    const spec = base.attempt(column("a"));
    expectTypeOf<
      ErrorMessage<Parameters<typeof spec.attempt<"a">>[0]>
    >().toEqualTypeOf<"the attempt role is already played by a column: a table has at most one attempt column, so describe this one with .data(…) or drop it">();
    // @ts-expect-error the attempt role is already played by a column
    spec.attempt(column("a"));
  });

  test("a lease column, then an advisory key", () => {
    const spec = base.lease(column("locked_until"));
    expectTypeOf<
      ErrorMessage<Parameters<typeof spec.advisoryLock<"k-{id}">>[0]>
    >().toEqualTypeOf<"a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both">();
    // @ts-expect-error a lease column and an advisory key exclude each other
    spec.advisoryLock("k-{id}");
  });

  test("an advisory key, then a lease column", () => {
    const spec = base.advisoryLock("k-{id}");
    expectTypeOf<
      ErrorMessage<Parameters<typeof spec.lease<"locked_until">>[0]>
    >().toEqualTypeOf<"a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both">();
    // @ts-expect-error a lease column and an advisory key exclude each other
    spec.lease(column("locked_until"));
  });

  test("fifo without a group", () => {
    expectTypeOf<ErrorMessage<ThisParameterType<typeof base.fifo>>>().toEqualTypeOf<"fifo needs a group column: describe one with .group(column(…)) before .fifo()">();
    // @ts-expect-error fifo needs a group column
    base.fifo();
  });

  test("fifo with an advisory key, in either order", () => {
    const keyed = base.group(column("g")).advisoryLock("k-{id}");
    const message = "fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them";
    expectTypeOf<ErrorMessage<ThisParameterType<typeof keyed.fifo>>>().toEqualTypeOf<typeof message>();
    // @ts-expect-error fifo and an advisory key exclude each other
    keyed.fifo();

    const fifo = base.group(column("g")).fifo();
    expectTypeOf<ErrorMessage<Parameters<typeof fifo.advisoryLock<"k-{id}">>[0]>>().toEqualTypeOf<typeof message>();
    // @ts-expect-error fifo and an advisory key exclude each other
    fifo.advisoryLock("k-{id}");
  });

  test("an advisory key naming a column that is not described", () => {
    expectTypeOf<
      ErrorMessage<Parameters<typeof base.advisoryLock<"report-{customer_id}">>[0]>
    >().toEqualTypeOf<"the advisory key names a column that is not described: describe customer_id first (with .data(column(…)) if it plays no role)">();
    // @ts-expect-error the advisory key names a column that is not described
    base.advisoryLock("report-{customer_id}");
    // described first (as data), the same key compiles
    base.data(column("customer_id")).advisoryLock("report-{customer_id}");
  });
});
