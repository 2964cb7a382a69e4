import { describe, expectTypeOf, test } from "vitest";
import { column, defineInbox, field, InboxSpec, type CheckDefinition, type DataOf, type Lease, type OrderKey, type RolesOf, type RowOf, type SpecError } from "../src/internal.js";
import { definition, type ErrorMessage } from "./type-helpers.js";

const base = InboxSpec.table("ledger_jobs", column("id").generated());
const withGroup = "an order key and a group exclude each other: keep the order key, or the group (and fifo), not both";
const withAdvisory = "an order key and an advisory key exclude each other: name its column in the key template and drop the order key";

describe("an order key: what compiles", () => {
  test("by hand: the role joins the tuple, the column is typed by what it holds and a publish may write it", () => {
    const spec = base.lease(column("locked_until")).orderKey(column("account_id").holds<number>().type("bigint"));
    expectTypeOf<RolesOf<typeof spec>>().toEqualTypeOf<[Lease<Date>, OrderKey]>();
    expectTypeOf<RowOf<typeof spec>["account_id"]>().toEqualTypeOf<number>();
    expectTypeOf<DataOf<typeof spec>>().toEqualTypeOf<{ readonly account_id: number }>();
  });

  test("declarative: the same roles and data", () => {
    const spec = defineInbox({
      table: "ledger_jobs",
      columns: { id: field.id(), lockedUntil: field.lease("locked_until"), account: field.orderKey("account_id").holds<string>() },
    });
    expectTypeOf<RolesOf<typeof spec>>().toEqualTypeOf<[Lease<Date>, OrderKey]>();
    expectTypeOf<DataOf<typeof spec>>().toEqualTypeOf<{ readonly account: string }>();
  });
});

describe("an order key: what does not compile, and why", () => {
  test("with a group, in either order (by hand)", () => {
    const grouped = base.group(column("grp"));
    expectTypeOf<ErrorMessage<Parameters<typeof grouped.orderKey<"account_id">>[0]>>().toEqualTypeOf<typeof withGroup>();
    // @ts-expect-error an order key and a group exclude each other
    grouped.orderKey(column("account_id"));

    const keyed = base.orderKey(column("account_id"));
    expectTypeOf<ErrorMessage<Parameters<typeof keyed.group<"grp">>[0]>>().toEqualTypeOf<typeof withGroup>();
    // @ts-expect-error an order key and a group exclude each other
    keyed.group(column("grp"));
  });

  test("with fifo (by hand): fifo needs the group an order key refuses", () => {
    const fifo = base.group(column("grp")).fifo();
    expectTypeOf<ErrorMessage<Parameters<typeof fifo.orderKey<"account_id">>[0]>>().toEqualTypeOf<typeof withGroup>();
    // @ts-expect-error an order key and a group exclude each other
    fifo.orderKey(column("account_id"));
  });

  test("with an advisory key, in either order (by hand)", () => {
    const advisory = base.data(column("account_id")).advisoryLock("acct-{account_id}");
    expectTypeOf<ErrorMessage<Parameters<typeof advisory.orderKey<"tenant">>[0]>>().toEqualTypeOf<typeof withAdvisory>();
    // @ts-expect-error an order key and an advisory key exclude each other
    advisory.orderKey(column("tenant"));

    const keyed = base.orderKey(column("account_id"));
    expectTypeOf<ErrorMessage<Parameters<typeof keyed.advisoryLock<"acct-{account_id}">>[0]>>().toEqualTypeOf<typeof withAdvisory>();
    // @ts-expect-error an order key and an advisory key exclude each other
    keyed.advisoryLock("acct-{account_id}");
  });

  test("twice (by hand)", () => {
    const keyed = base.orderKey(column("account_id"));
    expectTypeOf<
      ErrorMessage<Parameters<typeof keyed.orderKey<"tenant">>[0]>
    >().toEqualTypeOf<"the orderKey role is already played by a column: a table has at most one orderKey column, so describe this one with .data(…) or drop it">();
    // @ts-expect-error the orderKey role is already played by a column
    keyed.orderKey(column("tenant"));
  });

  test("with a group or fifo (declarative)", () => {
    const grouped = definition({ table: "t", columns: { id: field.id(), queue: field.group(), account: field.orderKey() } });
    expectTypeOf<CheckDefinition<typeof grouped>>().toEqualTypeOf<SpecError<typeof withGroup>>();
    // @ts-expect-error an order key and a group exclude each other
    defineInbox({ table: "t", columns: { id: field.id(), queue: field.group(), account: field.orderKey() } });

    const fifo = definition({ table: "t", columns: { id: field.id(), queue: field.group(), account: field.orderKey() }, fifo: true });
    expectTypeOf<CheckDefinition<typeof fifo>>().toEqualTypeOf<SpecError<typeof withGroup>>();
    // @ts-expect-error an order key and fifo exclude each other
    defineInbox({ table: "t", columns: { id: field.id(), queue: field.group(), account: field.orderKey() }, fifo: true });
  });

  test("with an advisory key (declarative)", () => {
    const advisory = definition({ table: "t", columns: { id: field.id(), account: field.orderKey("account_id") }, advisoryLock: "acct-{account_id}" });
    expectTypeOf<CheckDefinition<typeof advisory>>().toEqualTypeOf<SpecError<typeof withAdvisory>>();
    // @ts-expect-error an order key and an advisory key exclude each other
    defineInbox({ table: "t", columns: { id: field.id(), account: field.orderKey("account_id") }, advisoryLock: "acct-{account_id}" });
  });
});
