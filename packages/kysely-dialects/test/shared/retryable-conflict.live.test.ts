/**
 * `isRetryableConflict` on the errors the drivers really throw: a Postgres deadlock (40P01) and
 * serialization failure (40001), MariaDB's 40001 and its deadlock (1213) are retryable; a unique
 * violation on either engine is not.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, expect, test } from "vitest";
import { isRetryableConflict } from "../../src/internal.js";
import { connectMariadb, connectPostgres, selects, type LiveEngine } from "../support/servers.js";

let pg: LiveEngine;
let maria: LiveEngine;
beforeAll(async () => {
  if (selects("postgres")) pg = await connectPostgres();
  if (selects("mariadb")) maria = await connectMariadb();
});
afterAll(async () => {
  await pg?.close();
  await maria?.close();
});

async function errorOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("the statement did not fail");
}

test.runIf(selects("postgres"))("Postgres: 40001 and 40P01 are retryable, 23505 is not", async () => {
  const raise = (code: string) => errorOf(() => sql.raw(`DO $$ BEGIN RAISE EXCEPTION 'test' USING ERRCODE = '${code}'; END $$`).execute(pg.db));
  expect(isRetryableConflict(await raise("40001"))).toBe(true);
  expect(isRetryableConflict(await raise("40P01"))).toBe(true);
  expect(isRetryableConflict(await raise("23505"))).toBe(false);
});

test.runIf(selects("mariadb"))("MariaDB: SQLSTATE 40001 and error 1213 are retryable, 1062 is not", async () => {
  const signal = (state: string, errno?: number) =>
    errorOf(() => sql.raw(`SIGNAL SQLSTATE '${state}' SET MESSAGE_TEXT = 'test'${errno === undefined ? "" : `, MYSQL_ERRNO = ${errno}`}`).execute(maria.db));
  expect(isRetryableConflict(await signal("40001"))).toBe(true);
  expect(isRetryableConflict(await signal("40001", 1213))).toBe(true);
  expect(isRetryableConflict(await signal("23000", 1062))).toBe(false);
  expect(isRetryableConflict(new Error("connection reset"))).toBe(false);
  expect(isRetryableConflict(undefined)).toBe(false);
});
