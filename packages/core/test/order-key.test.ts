import { describe, expect, test } from "vitest";
import { column, defineInbox, field, InboxSpec, type Column, type InboxDefinition, type InboxDescription } from "../src/internal.js";

/** The builder with its compile-time rules taken off: what JavaScript (or a cast) can call. */
interface Unchecked {
  readonly description: InboxDescription;
  group(col: Column): Unchecked;
  fifo(): Unchecked;
  data(col: Column): Unchecked;
  orderKey(col: Column): Unchecked;
  advisoryLock(template: string): Unchecked;
}
const byHand = (): Unchecked => InboxSpec.table("ledger_jobs", column("id")) as unknown as Unchecked;
const declare = (definition: InboxDefinition) => defineInbox(definition as never);

describe("an order key at run time (a JavaScript caller, or a cast past the types)", () => {
  test("is described as the orderKey role, typed as given", () => {
    const spec = byHand().orderKey(column("account_id").type("bigint")).description;
    expect(spec.orderKey).toEqual({ name: "account_id", key: "account_id", role: "orderKey", generated: false, type: "bigint" });
    expect(spec.form).toBe("rowLock");
  });

  test("with a group or fifo is refused, naming the order key column", () => {
    expect(() => byHand().group(column("grp")).orderKey(column("account_id"))).toThrow(
      /^Declaration: an order key and a group exclude each other: keep the order key, or the group \(and fifo\), not both \(table "ledger_jobs", column "account_id"\)$/,
    );
    expect(() => declare({ table: "t", fifo: true, columns: { id: field.id(), queue: field.group(), account: field.orderKey("account_id") } })).toThrow(
      /an order key and a group exclude each other/,
    );
  });

  test("with an advisory key is refused", () => {
    expect(() => byHand().orderKey(column("account_id")).advisoryLock("acct-{account_id}")).toThrow(
      /^Declaration: an order key and an advisory key exclude each other: name its column in the key template and drop the order key \(table "ledger_jobs", column "account_id"\)$/,
    );
  });
});
