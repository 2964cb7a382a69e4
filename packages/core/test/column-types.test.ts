import { describe, expect, test } from "vitest";
import { column, defineInbox, field, InboxSpec, isSqlInboxError, PORTABLE_TYPES, type Column } from "../src/internal.js";

const byHand = () =>
  InboxSpec.table("jobs", column("id").generated())
    .attempt(column("attempt").generated())
    .data(column("customer_id").type("bigint"))
    .key(column("job_key"))
    .payload(column("payload"));
const declared = () =>
  defineInbox({
    table: "jobs",
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      customer_id: field.data<number>().type("bigint"),
      job_key: field.key(),
      payload: field.payload(),
    },
  });

describe("portable types and the dedup key in the description", () => {
  test("both forms give the same description: the type on the data column, the key role", () => {
    const description = byHand().description;
    expect(declared().description).toEqual(description);
    expect(description.columns.find((c) => c.name === "customer_id")).toEqual({ name: "customer_id", key: "customer_id", role: "data", generated: false, type: "bigint" });
    expect(description.key).toEqual({ name: "job_key", key: "job_key", role: "key", generated: false });
    // a column without a type has no `type` entry at all, in both forms
    expect("type" in description.id).toBe(false);
    expect("type" in (declared().description.key ?? {})).toBe(false);
  });

  test("an id the application fills takes a type too", () => {
    const hand = InboxSpec.table("jobs", column("id").type("text")).description.id;
    const decl = defineInbox({ table: "jobs", columns: { id: field.id<string>().type("text") } }).description.id;
    expect(hand).toEqual({ name: "id", key: "id", role: "id", generated: false, type: "text" });
    expect(decl).toEqual(hand);
  });

  test(".type(…) keeps the name, generated and holds; .generated() and .holds() keep the type", () => {
    const c = column("n").holds<number>().type("integer").generated();
    expect([c.name, c.isGenerated, c.sqlType]).toEqual(["n", true, "integer"]);
    const f = field.data("n").type("double").generated();
    expect([f.name, f.isGenerated, f.sqlType]).toEqual(["n", true, "double"]);
  });

  test("the portable types", () => {
    expect([...PORTABLE_TYPES]).toEqual(["text", "bigint", "integer", "double", "boolean", "timestamp", "json", "bytes"]);
  });
});

describe("what the description refuses at run time (JavaScript, or past the types)", () => {
  const refused = (build: () => unknown): string => {
    try {
      build();
    } catch (error) {
      if (isSqlInboxError(error)) return error.message;
      throw error;
    }
    throw new Error("not refused");
  };

  test("a type that is not portable, named with the column", () => {
    expect(refused(() => column("n").type("varchar(10)" as never))).toMatch(
      /^Declaration: column "n" has the type "varchar\(10\)", which is not portable: use one of text, bigint, integer, double, boolean, timestamp, json, bytes/,
    );
    expect(refused(() => field.data("n").type("money" as never))).toMatch(/column "n" has the type "money", which is not portable/);
  });

  test("a type on a role whose type the role fixes", () => {
    const typedLease = column("locked_until").type("timestamp") as unknown as Column<"locked_until", false, unknown, undefined>;
    expect(refused(() => InboxSpec.table("jobs", column("id")).lease(typedLease))).toMatch(
      /^Declaration: the lease column "locked_until" has a type, but its type is fixed by its role: drop \.type\(…\) \(only id, order key and data columns take a type\)/,
    );
    const typedKey = field.key("job_key") as unknown as { type(t: string): never };
    expect(refused(() => defineInbox({ table: "jobs", columns: { id: field.id(), job_key: typedKey.type("text") } } as never))).toMatch(
      /the key column "job_key" has a type, but its type is fixed by its role/,
    );
  });

  test("two dedup keys", () => {
    expect(refused(() => defineInbox({ table: "jobs", columns: { id: field.id(), a: field.key(), b: field.key() } } as never))).toMatch(
      /the key role is played by both "a" and "b"/,
    );
  });
});
