/**
 * A row-lock claim's transaction without a Kysely transaction object (`SessionTransaction`):
 * BEGIN, statements and COMMIT or ROLLBACK on one pool connection it holds. What must hold on
 * every engine with row locks, on a pool of one connection, so a connection never given back
 * shows as the next transaction never starting:
 * - a commit makes the writes visible and gives the connection back;
 * - a rollback undoes them, gives the connection back, and a statement after the end is
 *   refused without running (the connection may already serve another transaction);
 * - a failed BEGIN and a failed COMMIT (the session killed from the server) reject and give
 *   the connection back, the failed one closed by the pool's session guard;
 * - on MySQL/MariaDB the transaction runs READ COMMITTED, as the claim asks.
 */
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { CompiledQuery, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SessionTransaction } from "../../../src/claim/held/claim-transaction.js";
import { holdConnection } from "../../../src/claim/held/held-connection.js";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { parseDatabaseUrl } from "@sqlinbox/database";
import { serverEngines } from "../../support/claim-forms.js";
import { unique } from "../../support/engines.js";

const idOf = (result: { readonly rows: readonly unknown[] }): number => Number((result.rows[0] as { id?: unknown } | undefined)?.id);

/** Ends the session that runs `connectionId` from another connection (an outage as the server sees it). */
async function killSession(engine: (typeof serverEngines)[number], admin: AnyKysely, connectionId: number): Promise<void> {
  if (engine.engine === "postgres") await sql`select pg_terminate_backend(${connectionId})`.execute(admin);
  else await sql.raw(`KILL CONNECTION ${Number(connectionId)}`).execute(admin);
}

describe.each(serverEngines)("claim transaction on a held connection, $name", (engine) => {
  const statements = dialectFor(engine.engine).transaction;
  const connectionIdQuery = CompiledQuery.raw(engine.engine === "postgres" ? "select pg_backend_pid() as id" : "select connection_id() as id");
  let admin: AnyKysely;
  let pool: AnyKysely;
  const table = unique("claim_trx");
  const insert = (n: number) => CompiledQuery.raw(`insert into ${table} (n) values (${n})`);
  const count = async () => Number((await sql<{ c: number | string }>`select count(*) as c from ${sql.table(table)}`.execute(admin)).rows[0]?.c);

  beforeAll(async () => {
    admin = await engine.connect(engine.url());
    await sql`drop table if exists ${sql.table(table)}`.execute(admin);
    await sql`create table ${sql.table(table)} (n integer not null)`.execute(admin);
    pool = (await parseDatabaseUrl(engine.url()).open({ max: 1 })).db;
  });
  afterAll(async () => {
    await pool.destroy();
    await engine.dropTable(admin, table);
    await admin.destroy();
  });

  test("a commit makes the writes visible and gives the connection back", async () => {
    await sql`delete from ${sql.table(table)}`.execute(admin);
    for (let i = 0; i < 3; i++) {
      // A pool of one: the next BEGIN waits for a connection the last transaction never gave back.
      const trx = await SessionTransaction.begin(pool, statements);
      await trx.executeQuery(insert(i));
      expect(await count()).toBe(i); // not visible before the commit
      await trx.commit();
      expect(trx.isCommitted).toBe(true);
      expect(await count()).toBe(i + 1);
    }
  });

  test("a rollback undoes the writes; a statement after the end is refused and runs nowhere", async () => {
    await sql`delete from ${sql.table(table)}`.execute(admin);
    const trx = await SessionTransaction.begin(pool, statements);
    await trx.executeQuery(insert(1));
    await trx.rollback();
    expect(trx.isRolledBack).toBe(true);
    await expect(trx.executeQuery(insert(2))).rejects.toThrow("the claim's transaction is already rolled back");
    await expect(trx.commit()).rejects.toThrow("already rolled back");
    await trx.rollback(); // a second rollback is nothing
    // The connection went back: a new transaction takes it, and neither insert is there.
    const next = await SessionTransaction.begin(pool, statements);
    await next.commit();
    expect(await count()).toBe(0);
  });

  test("a failed BEGIN rejects and gives the connection back", async () => {
    await expect(SessionTransaction.begin(pool, { ...statements, begin: [CompiledQuery.raw("begin nonsense")] })).rejects.toThrow();
    const trx = await SessionTransaction.begin(pool, statements);
    await trx.rollback();
  });

  test("a COMMIT on a session killed by the server rejects, leaves nothing committed, and gives the connection back", async () => {
    await sql`delete from ${sql.table(table)}`.execute(admin);
    const trx = await SessionTransaction.begin(pool, statements);
    await trx.executeQuery(insert(7));
    const id = idOf(await trx.executeQuery(connectionIdQuery));
    await killSession(engine, admin, id);
    await expect(trx.commit()).rejects.toThrow();
    expect(trx.isRolledBack).toBe(true);
    expect(await count()).toBe(0);
    // The pool's one connection came back (closed, and replaced by a fresh one).
    const next = await SessionTransaction.begin(pool, statements);
    const nextId = idOf(await next.executeQuery(connectionIdQuery));
    await next.commit();
    expect(nextId).not.toBe(id);
  });

  test("a held connection refuses statements once given back; a transaction on it leaves it held (an advisory move)", async () => {
    await sql`delete from ${sql.table(table)}`.execute(admin);
    const held = await holdConnection(pool);
    expect(held.kysely).toBeUndefined();
    const id = idOf(await held.executeQuery(connectionIdQuery));
    await SessionTransaction.within(held, statements, (move) => move.executeQuery(insert(1)));
    // A move that throws rolls back, and the connection stays held too.
    await expect(
      SessionTransaction.within(held, statements, async (move) => {
        await move.executeQuery(insert(3));
        throw new Error("the move failed");
      }),
    ).rejects.toThrow("the move failed");
    // Still the same session, still out of the pool: the delivery unlocks its key on it afterwards.
    expect(idOf(await held.executeQuery(connectionIdQuery))).toBe(id);
    held.release();
    await expect(held.executeQuery(insert(2))).rejects.toThrow("the connection was given back to the pool");
    const next = await SessionTransaction.begin(pool, statements);
    await next.commit();
    expect(await count()).toBe(1);
  });

  if (engine.engine === "mysql")
    test("MySQL/MariaDB: the transaction runs READ COMMITTED, as Kysely's setIsolationLevel would open it", async () => {
      const trx = await SessionTransaction.begin(pool, statements);
      try {
        await trx.executeQuery(insert(1)); // the transaction is in InnoDB's list once it wrote
        const level = await trx.executeQuery(
          CompiledQuery.raw("select trx_isolation_level as level from information_schema.innodb_trx where trx_mysql_thread_id = connection_id()"),
        );
        expect(level.rows).toEqual([{ level: "READ COMMITTED" }]);
      } finally {
        await trx.rollback();
      }
    });
});
