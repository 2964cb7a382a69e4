import { describe, expect, test } from "vitest";
import {
  buildDescription,
  column,
  defineInbox,
  field,
  isSqlInboxError,
  InboxSpec,
  type Column,
  type InboxDefinition,
  type InboxDescription,
  type SqlInboxError,
} from "../src/internal.js";

/** The builder with its compile-time rules taken off: what JavaScript (or a cast) can call. */
interface Unchecked {
  readonly description: InboxDescription;
  attempt(col: Column): Unchecked;
  lease(col: Column): Unchecked;
  payload(col: Column): Unchecked;
  group(col: Column): Unchecked;
  priority(col: Column): Unchecked;
  data(col: Column): Unchecked;
  fifo(): Unchecked;
  advisoryLock(template: string): Unchecked;
}
const byHand = (table = "report_jobs"): Unchecked => InboxSpec.table(table, column("id")) as unknown as Unchecked;
/** `defineInbox` with its compile-time rules taken off. */
const declare = (definition: InboxDefinition) => defineInbox(definition as never);

/** Runs `build`, expects a Declaration error, and returns its message. */
function declarationError(build: () => unknown): string {
  let caught: unknown;
  try {
    build();
  } catch (error) {
    caught = error;
  }
  expect(isSqlInboxError(caught, "Declaration"), `expected a Declaration error, got ${String(caught)}`).toBe(true);
  return (caught as SqlInboxError).message;
}

describe("every rule the types check is checked again at run time, naming the table and the column", () => {
  test("a role set twice", () => {
    const hand = declarationError(() => byHand().attempt(column("attempt")).attempt(column("tries")));
    expect(hand).toBe(
      'Declaration: the attempt role is played by both "attempt" and "tries": a table has at most one attempt column, so describe the others as data (table "report_jobs", column "tries")',
    );
    const declared = declarationError(() => declare({ table: "report_jobs", columns: { id: field.id(), attempt: field.attempt(), tries: field.attempt() } }));
    expect(declared).toBe(hand);
  });

  test("two id columns", () => {
    const message = declarationError(() => declare({ table: "report_jobs", columns: { id: field.id(), uuid: field.id() } }));
    expect(message).toContain('the id role is played by both "id" and "uuid"');
    expect(message).toContain('(table "report_jobs", column "uuid")');
  });

  test("a column named twice", () => {
    const hand = declarationError(() => byHand().attempt(column("n")).payload(column("n")));
    expect(hand).toBe('Declaration: column "n" is described twice: describe each column once (table "report_jobs", column "n")');
    const declared = declarationError(() => declare({ table: "report_jobs", columns: { id: field.id(), a: field.data("n"), b: field.data("n") } }));
    expect(declared).toBe(hand);
    // the id's name counts too
    expect(declarationError(() => byHand().data(column("id")))).toContain('column "id" is described twice');
  });

  test("a lease column and an advisory key, in either order", () => {
    const expected =
      'Declaration: a lease column ("locked_until") and an advisory key ("k-{id}") exclude each other: keep the lease column or the advisory key, not both (table "report_jobs", column "locked_until")';
    expect(declarationError(() => byHand().lease(column("locked_until")).advisoryLock("k-{id}"))).toBe(expected);
    expect(declarationError(() => byHand().advisoryLock("k-{id}").lease(column("locked_until")))).toBe(expected);
    expect(declarationError(() => declare({ table: "report_jobs", columns: { id: field.id(), l: field.lease("locked_until") }, advisoryLock: "k-{id}" }))).toBe(expected);
  });

  test("fifo without a group", () => {
    const expected = 'Declaration: fifo needs a group column: describe one with the group role, or drop fifo (table "report_jobs")';
    expect(declarationError(() => byHand().fifo())).toBe(expected);
    expect(declarationError(() => declare({ table: "report_jobs", columns: { id: field.id() }, fifo: true }))).toBe(expected);
  });

  test("fifo with an advisory key, in either order", () => {
    const expected =
      'Declaration: fifo and an advisory key ("k-{id}") exclude each other: an advisory key already keeps rows that share it apart, so drop one of them (table "report_jobs")';
    expect(declarationError(() => byHand().group(column("g")).fifo().advisoryLock("k-{id}"))).toBe(expected);
    expect(declarationError(() => byHand().group(column("g")).advisoryLock("k-{id}").fifo())).toBe(expected);
    expect(declarationError(() => declare({ table: "report_jobs", columns: { id: field.id(), g: field.group() }, fifo: true, advisoryLock: "k-{id}" }))).toBe(expected);
  });

  test("an advisory key naming a column that is not described", () => {
    const expected =
      'Declaration: the advisory key "report-{customer_id}" names {customer_id}, which is not a described column: describe it, as data if it plays no role (table "report_jobs", column "customer_id")';
    expect(declarationError(() => byHand().advisoryLock("report-{customer_id}"))).toBe(expected);
    expect(declarationError(() => declare({ table: "report_jobs", columns: { id: field.id() }, advisoryLock: "report-{customer_id}" }))).toBe(expected);
  });

  test("no id column", () => {
    const message = declarationError(() => declare({ table: "report_jobs", columns: { attempt: field.attempt() } }));
    expect(message).toBe('Declaration: no id column is described: every table needs one, given by field.id() or as the second argument of InboxSpec.table (table "report_jobs")');
  });

  test("malformed advisory keys", () => {
    const build = (advisoryLock: string) => () => buildDescription({ table: "t", columns: [{ name: "id", key: "id", role: "id", generated: false }], advisoryLock });
    expect(declarationError(build(""))).toContain("the advisory key template is empty: give one that names a column");
    expect(declarationError(build("report-{id"))).toContain('the advisory key "report-{id" has an unmatched brace: write each placeholder as {column}');
    expect(declarationError(build("report-}{id}"))).toContain("unmatched brace");
    expect(declarationError(build("report"))).toContain('the advisory key "report" names no column: every row would share one key');
    expect(declarationError(build("report-{}"))).toContain("names {}, which is not a described column");
  });

  test("what only JavaScript can get wrong: an unknown role, a row key used twice", () => {
    const id = { name: "id", key: "id", role: "id", generated: false } as const;
    expect(declarationError(() => buildDescription({ table: "t", columns: [id, { name: "x", key: "x", role: "bogus" as never, generated: false }] }))).toContain(
      'column "x" has no known role "bogus": use one of id, attempt, lease',
    );
    expect(declarationError(() => buildDescription({ table: "t", columns: [id, { name: "x", key: "id", role: "data", generated: false }] }))).toBe(
      'Declaration: the row key "id" is used by two columns: give each column its own key (table "t", column "x")',
    );
  });
});
