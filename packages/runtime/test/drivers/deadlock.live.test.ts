/**
 * MariaDB: a deadlock (InnoDB 1213) in a runtime transaction is retried transparently and
 * counted in the logs. The deadlock is real: another session holds a row this one needs,
 * while waiting for a row this one holds.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { sql } from "kysely";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { Activity } from "../../src/activity.js";
import { Database, type AnyKysely } from "../../src/drivers/database.js";
import { MemoryLogger } from "../../src/testing/index.js";
import { engineNamed, selects, unique } from "../support/engines.js";
import { deferred } from "../support/fixtures.js";

const mariadb = engineNamed("mariadb");
const table = unique("rt_deadlock");
let ours: AnyKysely;
let theirs: AnyKysely;

beforeAll(async () => {
  ours = await mariadb.connect(mariadb.url());
  theirs = await mariadb.connect(mariadb.url());
  await mariadb.createLeaseTable(ours, table);
  await sql`INSERT INTO ${sql.id(table)} (id, payload) VALUES (1, 'a'), (2, 'b')`.execute(ours);
});
afterAll(async () => {
  await mariadb.dropTable(ours, table);
  await ours.destroy();
  await theirs.destroy();
});

test.runIf(selects("mariadb"))("a deadlocked transaction runs again and the retry is logged", async () => {
  const logger = new MemoryLogger();
  const database = new Database(ours, dialectFor("mysql"), logger, new Activity());
  const lock = (db: AnyKysely, id: number) => sql`SELECT id FROM ${sql.id(table)} WHERE id = ${id} FOR UPDATE`.execute(db);
  let runs = 0;
  let other: Promise<void> | undefined;
  await database.transaction("settle", async (trx) => {
    runs++;
    await lock(trx, 1);
    if (runs > 1) return;
    const holdsRow2 = deferred();
    other = theirs.transaction().execute(async (o) => {
      // An update makes their transaction the heavier one: InnoDB rolls ours back.
      await sql`UPDATE ${sql.id(table)} SET attempt = attempt + 1 WHERE id = 2`.execute(o);
      holdsRow2.resolve();
      await lock(o, 1);
    });
    await holdsRow2.promise;
    await new Promise((r) => setTimeout(r, 200)); // they now wait for row 1
    await lock(trx, 2); // closes the cycle
  });
  await other;
  expect(runs).toBe(2);
  expect(database.deadlocks).toBe(1);
  expect(logger.find("deadlock retried")[0]?.fields).toMatchObject({ statement: "settle", retry: 1, deadlocksRetried: 1 });
});
