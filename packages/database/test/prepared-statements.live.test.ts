/**
 * Named prepared statements on a Postgres pool opened from a URL (`preparedStatements`): a statement is
 * named from its second run and the session keeps it; a table change that alters a named statement's
 * result fails that one run and the next runs on a fresh session; a server that lost the name (what a
 * transaction pooler does) fails one run and turns naming off for the pool.
 */
import { type Kysely, sql } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import { parseDatabaseUrl } from "../src/index.js";

const PG_URL = process.env["SQLINBOX_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
// biome-ignore lint/suspicious/noExplicitAny: raw statements on tables made here
type Db = Kysely<any>;

const opened: Db[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.destroy();
});

/** A pool of one session, so every statement below runs on the session it inspects. */
async function open(preparedStatements: boolean): Promise<Db> {
  const { db } = await parseDatabaseUrl(PG_URL).open({ max: 1, preparedStatements });
  opened.push(db as Db);
  return db as Db;
}

/** The session's named statements that sqlinbox made. */
async function named(db: Db): Promise<string[]> {
  const rows = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'sqlinbox\\_%' order by statement`.execute(db);
  return rows.rows.map((r) => r.statement);
}

describe("named prepared statements on Postgres", () => {
  test("a statement with parameters is named from its second run and runs under its name after; one without parameters, or with naming off, never is", async () => {
    const db = await open(true);
    const twice = sql<{ v: number }>`select ${41}::int + 1 as v`;
    expect((await twice.execute(db)).rows).toEqual([{ v: 42 }]);
    expect(await named(db)).toEqual([]);
    for (let i = 0; i < 3; i++) expect((await twice.execute(db)).rows).toEqual([{ v: 42 }]);
    expect(await named(db)).toEqual(["select $1::int + 1 as v"]);
    await sql`select 1 as one`.execute(db);
    await sql`select 1 as one`.execute(db);
    expect(await named(db)).toEqual(["select $1::int + 1 as v"]);

    const off = await open(false);
    for (let i = 0; i < 3; i++) await twice.execute(off);
    expect(await named(off)).toEqual([]);
  });

  test("a table change that alters a named statement's result fails that one run; the next runs on a fresh session", async () => {
    const db = await open(true);
    const table = `prep_${process.pid}_${Date.now()}`;
    await sql`create table ${sql.table(table)} (id int primary key, payload text)`.execute(db);
    try {
      await sql`insert into ${sql.table(table)} values (1, 'a')`.execute(db);
      const read = () => sql<Record<string, unknown>>`select * from ${sql.table(table)} where id = ${1}`.execute(db);
      await read();
      await read();
      expect(await named(db)).toEqual([`select * from "${table}" where id = $1`]);
      await sql`alter table ${sql.table(table)} add column note text`.execute(db);
      await expect(read()).rejects.toMatchObject({ code: "0A000", message: "cached plan must not change result type" });
      expect((await read()).rows).toEqual([{ id: 1, payload: "a", note: null }]);
    } finally {
      await sql`drop table ${sql.table(table)}`.execute(db);
    }
  });

  test("a session that lost a name fails that run, and the pool stops naming statements", async () => {
    const db = await open(true);
    const statement = sql<{ v: number }>`select ${1}::int as v`;
    await statement.execute(db);
    await statement.execute(db);
    expect(await named(db)).toHaveLength(1);
    // What a pooler in transaction mode does: the next transaction gets a server session that never parsed it.
    await sql`deallocate all`.execute(db);
    await expect(statement.execute(db)).rejects.toMatchObject({ code: "26000" });
    for (let i = 0; i < 3; i++) expect((await statement.execute(db)).rows).toEqual([{ v: 1 }]);
    expect(await named(db)).toEqual([]);
  });
});

describe("withPreparedStatements: an application's own pg pool", () => {
  test("its Kysely names what it repeats, and a session whose named statement failed is not pooled again", async () => {
    const { default: pg } = await import("pg");
    const { Kysely, PostgresDialect } = await import("kysely");
    const { withPreparedStatements } = await import("../src/index.js");
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const db: Db = new Kysely({ dialect: new PostgresDialect({ pool: withPreparedStatements(pool) }) });
    opened.push(db);
    const statement = sql<{ v: number }>`select ${2}::int as v`;
    for (let i = 0; i < 3; i++) await statement.execute(db);
    expect(await named(db)).toEqual(["select $1::int as v"]);
    const before = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid;
    await sql`deallocate all`.execute(db);
    await expect(statement.execute(db)).rejects.toMatchObject({ code: "26000" });
    const after = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]?.pid;
    expect(after).not.toBe(before);
    expect((await statement.execute(db)).rows).toEqual([{ v: 2 }]);
  });
});
