import { describe, expect, test } from "vitest";
import { column, defineInbox, field, isSqlInboxError, InboxSpec, MAX_IDENTIFIER_LENGTH, validateIdentifier } from "../src/internal.js";

const refused: ReadonlyArray<readonly [string, string, string]> = [
  ["empty", "", "name is empty"],
  ["a dot", "public.jobs", "a dot is not allowed (name the table without a schema)"],
  ["a double quote", 'report"jobs', 'a quote (") is not allowed'],
  ["a single quote", "report'jobs", "a quote (') is not allowed"],
  ["a backquote", "report`jobs", "a quote (`) is not allowed"],
  ["a space", "report jobs", 'the character " " is not allowed'],
  ["a leading digit", "1jobs", "it must not start with a digit"],
  ["64 characters", "a".repeat(64), "is 64 characters long; at most 63 fit every engine"],
];

/** Runs `make`, expects an Identifier error, returns its message. */
function identifierError(make: () => unknown): string {
  let caught: unknown;
  try {
    make();
  } catch (error) {
    caught = error;
  }
  expect(isSqlInboxError(caught, "Identifier"), `expected an Identifier error, got ${String(caught)}`).toBe(true);
  return (caught as Error).message;
}

describe("identifiers are refused when they are described", () => {
  test.each(refused)("%s: as a table name, in both forms", (_, name, why) => {
    expect(identifierError(() => InboxSpec.table(name, column("id")))).toContain(why);
    expect(identifierError(() => defineInbox({ table: name, columns: { id: field.id() } }))).toContain(why);
  });

  test.each(refused)("%s: as a column name, by hand, by field name and by property key", (_, name, why) => {
    expect(identifierError(() => column(name))).toContain(why);
    expect(identifierError(() => field.data(name))).toContain(why);
    // a property key is the column's name when the field gives none (cast: a computed key widens the definition's type)
    expect(identifierError(() => defineInbox({ table: "t", columns: { id: field.id(), [name]: field.data() } } as never))).toContain(why);
  });

  test("the message names what was refused and says what to use", () => {
    expect(identifierError(() => InboxSpec.table("public.jobs", column("id")))).toBe(
      'Identifier: table name "public.jobs" cannot be an identifier: a dot is not allowed (name the table without a schema); use letters, digits and underscores',
    );
    expect(identifierError(() => field.lease("locked until"))).toBe(
      'Identifier: column (lease) name "locked until" cannot be an identifier: the character " " is not allowed; use letters, digits and underscores',
    );
  });

  test("what every engine accepts is kept as it is", () => {
    for (const name of ["report_jobs", "_x", "Jobs2", "a".repeat(MAX_IDENTIFIER_LENGTH)]) {
      expect(validateIdentifier(name, "table")).toBe(name);
    }
    expect(MAX_IDENTIFIER_LENGTH).toBe(63);
    expect(identifierError(() => validateIdentifier(42, "table"))).toBe("Identifier: table name must be a string, got number");
  });
});
