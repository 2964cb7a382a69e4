import { column, InboxSpec } from "@sqlinbox/core";
import { sql } from "kysely";
import { expect, test } from "vitest";
import { advisoryKeyOf, mysqlLockName } from "../../src/internal.js";
import { affected, run, type Db, type LiveEngine } from "../support/servers.js";
import { jobsTable, publish, readRows } from "./helpers.js";

const byCustomer = (table: string) =>
  InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .payload(column("payload"))
    .processedAt(column("processed_at"))
    .data(column("customer_id"))
    .advisoryLock("report-{customer_id}").description;

const byId = (table: string) =>
  InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).payload(column("payload")).advisoryLock("job-{id}").description;

/** Runs `work` with two distinct sessions of the pool (advisory locks belong to a session). */
async function twoSessions<T>(db: Db, work: (a: Db, b: Db) => Promise<T>): Promise<T> {
  return db.connection().execute((a) => db.connection().execute((b) => work(a, b)));
}

async function tryLock(engine: LiveEngine, session: Db, key: string): Promise<boolean> {
  if (engine.dialect.capabilities.advisoryLocks !== "session") throw new Error("no session locks");
  const query = engine.dialect.advisory.tryLock(key, engine.database);
  const row = (await session.executeQuery(query)).rows[0];
  return row?.locked === true || Number(row?.locked) === 1;
}

/** The advisory form with session locks (Postgres, MariaDB). */
export function advisoryScenarios(get: () => LiveEngine): void {
  test("advisory: a key held by one session is passed over by another (key from a non-id column)", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_customer");
    const spec = byCustomer(table);
    const { advisory } = engine.dialect;
    const [acme1, acme2, beta] = await publish(engine, spec, [
      { payload: "a1", customer_id: "acme" },
      { payload: "a2", customer_id: "acme" },
      { payload: "b", customer_id: "beta" },
    ]);
    const now = new Date();
    await twoSessions(engine.db, async (a, b) => {
      const candidatesA = (await run(a, advisory.selectCandidates(spec, { limit: 10, now }))).rows;
      expect(candidatesA.map((r) => Number(r.id))).toEqual([acme1, acme2, beta]);
      const keyA = advisoryKeyOf(spec, candidatesA[0]!);
      expect(await tryLock(engine, a, keyA)).toBe(true);
      expect(affected(await run(a, advisory.take(spec, acme1, now)))).toBe(1);

      // Session B sees the same candidates; both acme rows are passed over, beta is taken.
      const taken: number[] = [];
      for (const row of (await run(b, advisory.selectCandidates(spec, { limit: 10, now }))).rows) {
        const key = advisoryKeyOf(spec, row);
        if (!(await tryLock(engine, b, key))) continue;
        if (affected(await run(b, advisory.take(spec, row.id, now))) === 1) taken.push(Number(row.id));
        break;
      }
      expect(taken).toEqual([beta]);

      // A finishes acme1 and unlocks; B's late take of acme1 finds it gone (processed).
      expect(affected(await run(a, advisory.settleAck(spec, acme1, now)))).toBe(1);
      await run(a, advisory.unlock(keyA, engine.database));
      expect(await tryLock(engine, b, keyA)).toBe(true);
      expect(affected(await run(b, advisory.take(spec, acme1, now)))).toBe(0);
      expect(affected(await run(b, advisory.take(spec, acme2, now)))).toBe(1);
      await run(b, advisory.unlock(keyA, engine.database));
      await run(b, advisory.unlock(advisoryKeyOf(spec, { customer_id: "beta" }), engine.database));
    });
    const rows = new Map((await readRows(engine.db, table)).map((r) => [Number(r.id), Number(r.attempt)]));
    expect([rows.get(acme1!), rows.get(acme2!), rows.get(beta!)]).toEqual([2, 2, 2]);
  });

  test("advisory batch: one statement tries every key (a key another session holds reads not taken), one takes the locked rows as counted, one unlocks them", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_batch");
    const spec = byId(table);
    const { advisory } = engine.dialect;
    const ids = await publish(engine, spec, [{ payload: "a" }, { payload: "b" }, { payload: "c" }, { payload: "d" }]);
    const [free, heldElsewhere, finished, alsoFree] = ids as [number, number, number, number];
    const keyOf = (id: number) => advisoryKeyOf(spec, { id });
    const answers = (row: Record<string, unknown> | undefined, n: number) => Array.from({ length: n }, (_, i) => row?.[String(i)] === true || Number(row?.[String(i)]) === 1);
    const now = new Date();
    await twoSessions(engine.db, async (a, b) => {
      expect(await tryLock(engine, b, keyOf(heldElsewhere))).toBe(true);
      // Finished by another session after the candidates were read: locked, but the take leaves it.
      await sql`DELETE FROM ${sql.id(table)} WHERE id = ${finished}`.execute(engine.db);
      const keys = [free, heldElsewhere, finished, alsoFree].map(keyOf);
      const tried = (await run(a, advisory.tryLockMany(keys, engine.database))).rows[0];
      expect(answers(tried, 4)).toEqual([true, false, true, true]);
      const lockedIds = [free, finished, alsoFree];
      const take = await run(a, advisory.takeMany(spec, lockedIds, now));
      const rows = advisory.takeReturnsRow ? take.rows : (await run(a, advisory.readTakenMany(spec, lockedIds, now))).rows;
      expect(rows.map((r) => [Number(r.id), Number(r.attempt)]).sort((x, y) => (x[0] as number) - (y[0] as number))).toEqual([
        [free, 2],
        [alsoFree, 2],
      ]);
      // The session holds each key once: one unlock frees it, and another session can take it.
      const unlocked = (await run(a, advisory.unlockMany([keyOf(free), keyOf(finished), keyOf(alsoFree)], engine.database))).rows[0];
      expect(answers(unlocked, 3)).toEqual([true, true, true]);
      expect(await tryLock(engine, b, keyOf(free))).toBe(true);
      expect(answers((await run(b, advisory.unlockMany([keyOf(free), keyOf(heldElsewhere)], engine.database))).rows[0], 2)).toEqual([true, true]);
    });
  });

  test("advisory: the take reads back the attempt it counted, not the candidate's (RETURNING, or a read on the key's session)", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_read_back");
    const spec = byId(table);
    const { advisory } = engine.dialect;
    const [id] = await publish(engine, spec, [{ payload: "p" }]);
    const now = new Date();
    const [candidate] = (await run(engine.db, advisory.selectCandidates(spec, { limit: 1, now }))).rows;
    expect(Number(candidate?.attempt)).toBe(1);
    // Other sessions counted the row twice since the candidate was read.
    await sql`update ${sql.id(table)} set attempt = attempt + 2 where id = ${id}`.execute(engine.db);
    const key = advisoryKeyOf(spec, candidate!);
    const row = await engine.db.connection().execute(async (session) => {
      expect(await tryLock(engine, session, key)).toBe(true);
      try {
        const taken = await run(session, advisory.take(spec, id, now));
        expect(affected(taken)).toBe(1);
        return advisory.takeReturnsRow ? taken.rows[0] : (await run(session, advisory.readTaken(spec, id))).rows[0];
      } finally {
        await run(session, advisory.unlock(key, engine.database));
      }
    });
    expect([Number(row?.id), Number(row?.attempt), Buffer.from(row?.payload as Uint8Array).toString("utf8")]).toEqual([id, 4, "p"]);
  });

  test("advisory: keys from the id hold each row on its own", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_id");
    const spec = byId(table);
    const [one, two] = await publish(engine, spec, [{ payload: "1" }, { payload: "2" }]);
    await twoSessions(engine.db, async (a, b) => {
      expect(await tryLock(engine, a, advisoryKeyOf(spec, { id: one }))).toBe(true);
      expect(await tryLock(engine, b, advisoryKeyOf(spec, { id: one }))).toBe(false);
      expect(await tryLock(engine, b, advisoryKeyOf(spec, { id: two }))).toBe(true);
      await run(a, engine.dialect.advisory.unlock(advisoryKeyOf(spec, { id: one }), engine.database));
      await run(b, engine.dialect.advisory.unlock(advisoryKeyOf(spec, { id: two }), engine.database));
    });
  });

  test("advisory: unlock frees the key for another session", async () => {
    const engine = get();
    const key = `unlock-${process.pid}-${Math.random()}`;
    await twoSessions(engine.db, async (a, b) => {
      expect(await tryLock(engine, a, key)).toBe(true);
      expect(await tryLock(engine, b, key)).toBe(false);
      await run(a, engine.dialect.advisory.unlock(key, engine.database));
      expect(await tryLock(engine, b, key)).toBe(true);
      await run(b, engine.dialect.advisory.unlock(key, engine.database));
    });
  });
}

/** MariaDB: names past 64 characters are hashed, and GET_LOCK takes them. */
export function longLockNameScenario(get: () => LiveEngine): void {
  test("advisory: MariaDB lock names over 64 characters are hashed and GET_LOCK accepts them", async () => {
    const engine = get();
    const table = await jobsTable(engine, "adv_long");
    const spec = byCustomer(table);
    const customer = `customer-${"x".repeat(80)}`;
    const key = advisoryKeyOf(spec, { customer_id: customer });
    const name = mysqlLockName(engine.database, key);
    expect(`${engine.database}.${key}`.length).toBeGreaterThan(64);
    expect(name).toMatch(/^[0-9a-f]{64}$/);
    await twoSessions(engine.db, async (a, b) => {
      expect(await tryLock(engine, a, key)).toBe(true);
      const used = await sql<{ holder: unknown }>`select IS_USED_LOCK(${name}) as holder`.execute(b);
      expect(used.rows[0]?.holder).not.toBeNull();
      expect(await tryLock(engine, b, key)).toBe(false);
      await run(a, engine.dialect.advisory.unlock(key, engine.database));
      expect(await tryLock(engine, b, key)).toBe(true);
      await run(b, engine.dialect.advisory.unlock(key, engine.database));
    });
  });
}
