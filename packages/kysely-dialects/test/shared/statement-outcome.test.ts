/**
 * `wroteNothing` on the errors the drivers really throw: the server's answer to a statement (a
 * constraint, a deadlock, a raised error) proves nothing was written; a session killed under the
 * statement (Postgres 57P01 or a broken client, MariaDB's lost connection) may have committed; a
 * connect that never succeeded wrote nothing; SQLite runs in the process and always knows.
 */
import pg from "pg";
import { createConnection } from "mysql2";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mysqlDialect, postgresDialect, sqliteDialect } from "../../src/index.js";
import { connectMariadb, connectPostgres, selects, type LiveEngine } from "../support/servers.js";

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL = process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";

let pgLive: LiveEngine;
let maria: LiveEngine;
beforeAll(async () => {
  if (selects("postgres")) pgLive = await connectPostgres();
  if (selects("mariadb")) maria = await connectMariadb();
});
afterAll(async () => {
  await pgLive?.close();
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

test.runIf(selects("postgres"))("Postgres: a server's answer wrote nothing; a terminated session and a broken client may have; a refused connect wrote nothing", async () => {
  const raise = (code: string) => errorOf(() => sql.raw(`DO $$ BEGIN RAISE EXCEPTION 'test' USING ERRCODE = '${code}'; END $$`).execute(pgLive.db));
  for (const code of ["23505", "40001", "40P01", "57014"]) expect([code, postgresDialect.wroteNothing(await raise(code))]).toEqual([code, true]);

  // Its own session terminated under a statement: 57P01 (or the socket closing first).
  const client = new pg.Client({ connectionString: PG_URL });
  client.on("error", () => {});
  const ended = new Promise((resolve) => client.once("end", resolve));
  await client.connect();
  const terminated = await errorOf(() => client.query("SELECT pg_terminate_backend(pg_backend_pid()), pg_sleep(1)"));
  expect(postgresDialect.wroteNothing(terminated)).toBe(false);
  // Once its socket closed, the broken client refuses the next query without sending it.
  await ended;
  const notQueryable = await errorOf(() => client.query("SELECT 1"));
  expect((notQueryable as Error).message).toMatch(/is not queryable/);
  expect(postgresDialect.wroteNothing(notQueryable)).toBe(true);
  await client.end().catch(() => {});

  const nowhere = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:1/nowhere" });
  expect(postgresDialect.wroteNothing(await errorOf(() => nowhere.connect()))).toBe(true);
  expect(postgresDialect.wroteNothing(new Error("Connection terminated unexpectedly"))).toBe(false);
});

test.runIf(selects("mariadb"))("MariaDB: a server's answer wrote nothing; a killed connection may have", async () => {
  const signal = (state: string, errno: number) => errorOf(() => sql.raw(`SIGNAL SQLSTATE '${state}' SET MESSAGE_TEXT = 'test', MYSQL_ERRNO = ${errno}`).execute(maria.db));
  expect(mysqlDialect.wroteNothing(await signal("23000", 1062))).toBe(true);
  expect(mysqlDialect.wroteNothing(await signal("40001", 1213))).toBe(true);

  const connection = createConnection({ uri: MYSQL_URL });
  connection.on("error", () => {});
  const query = (text: string) => new Promise<unknown>((resolve, reject) => connection.query(text, (e, rows) => (e ? reject(e) : resolve(rows))));
  const [{ id }] = (await query("SELECT CONNECTION_ID() AS id")) as [{ id: number }];
  const sleeping = errorOf(() => query("SELECT SLEEP(5)"));
  await new Promise((r) => setTimeout(r, 200));
  await sql.raw(`KILL CONNECTION ${Number(id)}`).execute(maria.db);
  const killed = await sleeping;
  expect(mysqlDialect.wroteNothing(killed)).toBe(false);
  // The closed connection refuses the next query without sending it.
  const closed = await errorOf(() => query("SELECT 1"));
  expect(mysqlDialect.wroteNothing(closed)).toBe(true);
  connection.destroy();
});

test("SQLite: a failed statement wrote nothing", () => {
  expect(sqliteDialect.wroteNothing(new Error("UNIQUE constraint failed: jobs.job_key"))).toBe(true);
});
