/**
 * `endsTransaction` tells a transaction's COMMIT or ROLLBACK, as Kysely's drivers and this package's
 * own transaction statements send them, from every other statement (the runtime hears a caller's
 * commit by it).
 */
import { CompiledQuery } from "kysely";
import { describe, expect, test } from "vitest";
import { dialectFor, endsTransaction } from "../../src/internal.js";

describe("endsTransaction", () => {
  test.each(["postgres", "mysql", "sqlite"] as const)("the %s dialect's own commit and rollback end a transaction; its begin does not", (engine) => {
    const { transaction } = dialectFor(engine);
    expect(endsTransaction(transaction.commit)).toBe(true);
    expect(endsTransaction(transaction.rollback)).toBe(true);
    for (const statement of transaction.begin) expect(endsTransaction(statement)).toBe(false);
  });

  test("a driver's raw end statements, in any case and spacing, end one; other statements do not", () => {
    for (const sql of ["commit", "rollback", "COMMIT", " Rollback ;"]) expect(endsTransaction(CompiledQuery.raw(sql))).toBe(true);
    for (const sql of ["select 1", "commit and chain", "rollback to savepoint sqlinbox_handler", "release savepoint s", 'update "commit" set x = 1'])
      expect(endsTransaction(CompiledQuery.raw(sql))).toBe(false);
  });
});
