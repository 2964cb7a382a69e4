/**
 * Two lease claims of one order key side by side, on the server engines: a claim reads the leases
 * committed when it began, so it cannot see a lease another claim is still writing. Row B (a later
 * row of key 7) is taken by claim 1, which is held in its write by a trigger that waits for a lock
 * the test holds; meanwhile row A, published earlier in a transaction left open, commits and is its
 * key's head, and claim 2 takes it (no live lease is visible: claim 1 has not committed). Claim 1 then
 * commits. Each claim checks its rows once committed, and the later one sees the other's lease: B is
 * given back unstarted (attempt undone), and runs only after A settles.
 *
 * A check that fails (its session killed while it waits for a table lock queued behind the stalled
 * claim) gives every row of its claim back: the row runs once, on its first attempt.
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import type { AnyKysely } from "../../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, createInboxTable, keys, subscriber } from "../../../src/index.js";
import { MemoryLogger } from "../../../src/testing/index.js";
import { serverEngines, until } from "../../support/claim-forms.js";
import { unique } from "../../support/engines.js";
import { deferred, useEngineConnection, type Deferred } from "../../support/fixtures.js";
import { Gates, insertLedgerRows, ledgerIds, orderedSpecOf } from "../../support/order-key-tables.js";
import { sleep } from "../../support/sleep.js";

const POLL = 30;
const STALL_KEY = 4_721_001;

describe.each(serverEngines)("two lease claims of one key side by side, on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });

  const postgres = engine.name === "postgres";

  /**
   * A trigger that makes the claim of the row with priority 1 (row B) wait, inside its write, for the
   * lock `holdStall` holds. Made before row A's transaction begins: creating a trigger waits for the
   * transactions that wrote to the table.
   */
  async function stallClaimOfB(table: string): Promise<void> {
    if (postgres) {
      await sql
        .raw(
          `CREATE FUNCTION ${table}_stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
             IF NEW.priority = 1 AND NEW.locked_until IS NOT NULL AND OLD.locked_until IS NULL THEN
               PERFORM pg_advisory_lock(${STALL_KEY}); PERFORM pg_advisory_unlock(${STALL_KEY});
             END IF; RETURN NEW; END $$`,
        )
        .execute(db);
      await sql.raw(`CREATE TRIGGER ${table}_stall BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_stall()`).execute(db);
    } else {
      await sql
        .raw(
          `CREATE TRIGGER ${table}_stall BEFORE UPDATE ON ${table} FOR EACH ROW BEGIN
             IF NEW.priority = 1 AND NEW.locked_until IS NOT NULL AND OLD.locked_until IS NULL THEN
               SET @sqlinbox_stall = GET_LOCK('${table}_stall', 30); DO RELEASE_LOCK('${table}_stall');
             END IF; END`,
        )
        .execute(db);
    }
  }

  /** Holds the stall lock on a connection of its own until `release` resolves. */
  function holdStall(locker: AnyKysely, table: string, release: Deferred): { held: Promise<void>; done: Promise<void> } {
    const held = deferred();
    const done = locker.connection().execute(async (c) => {
      if (postgres) await sql`SELECT pg_advisory_lock(${STALL_KEY})`.execute(c);
      else await sql`SELECT GET_LOCK(${`${table}_stall`}, 5)`.execute(c);
      held.resolve();
      await release.promise;
      if (postgres) await sql`SELECT pg_advisory_unlock(${STALL_KEY})`.execute(c);
      else await sql`SELECT RELEASE_LOCK(${`${table}_stall`})`.execute(c);
    });
    return { held: held.promise, done };
  }

  /** A claim is waiting in the trigger for the stall lock. */
  async function claimStalled(table: string): Promise<boolean> {
    if (postgres) {
      const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = ${STALL_KEY}`.execute(db);
      return Number(rows[0]?.n) > 0;
    }
    const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM information_schema.processlist WHERE state = 'User lock' AND info LIKE ${`%${table}%`}`.execute(db);
    return Number(rows[0]?.n) > 0;
  }

  test("the row whose claim commits later is given back unstarted and runs after the other settles", async () => {
    const table = unique("ordered_race").toLowerCase();
    const spec = orderedSpecOf(table, "lease");
    await createInboxTable(db, spec);
    await stallClaimOfB(table);
    const writer: AnyKysely = await engine.connect(url);
    const locker: AnyKysely = await engine.connect(url);
    const inserted = deferred();
    const commit = deferred();
    const release = deferred();
    const t1 = writer.transaction().execute(async (trx) => {
      await insertLedgerRows(trx, table, [{ account: 7 }]);
      inserted.resolve();
      await commit.promise;
    });
    const gates = new Gates();
    const apps: Array<{ stop(): Promise<unknown> }> = [];
    const logs = new MemoryLogger();
    const startApp = async (): Promise<void> => {
      const queue = InboxQueue.of(spec, "ledger").lease(5000).workers(4).pollInterval(POLL);
      const sub = subscriber(queue, async (_job, ctx) => {
        await gates.run(Number(ctx.get(keys.id)));
        return HandlerOutcome.ack();
      });
      const built = new App({ name: `race-${apps.length}`, version: "0", logger: logs }).withBroker(SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "ledger"), (b) =>
        b.include(sub),
      );
      apps.push(await built.start());
    };
    let stall: { held: Promise<void>; done: Promise<void> } | undefined;
    try {
      await inserted.promise;
      await insertLedgerRows(db, table, [{ account: 7, priority: 1 }]);
      const [b] = (await ledgerIds(db, table)).map((r) => r.id) as [number];
      const rowB = async () => {
        const { rows } = await sql<{ attempt: number; locked_until: unknown }>`SELECT attempt, locked_until FROM ${sql.table(table)} WHERE id = ${b}`.execute(db);
        return rows.map((r) => ({ attempt: Number(r.attempt), lease: r.locked_until }));
      };
      const [before] = await rowB();
      stall = holdStall(locker, table, release);
      await stall.held;

      // Claim 1 takes B (the key's head while A is uncommitted) and waits in its write.
      await startApp();
      await until(() => claimStalled(table), 10_000, "a claim of B waiting in the trigger");
      // A commits: it is now the key's head, and no lease of the key is visible.
      commit.resolve();
      await t1;
      const a = (await ledgerIds(db, table)).map((r) => r.id).find((id) => id !== b);
      if (a === undefined) throw new Error("row A is not in the table");
      expect(a).toBeLessThan(b);
      await startApp();
      await until(() => gates.started.includes(a), 10_000, "row A taken by a claim beside the stalled one");

      // Claim 1 commits B's lease; its check finds A's lease live, and B is given back.
      release.resolve();
      await until(async () => !(await claimStalled(table)), 10_000, "the stalled claim to go on");
      await sleep(POLL * 15);
      expect(gates.started).toEqual([a]);
      // Given back: no lease, and the claim's attempt undone; said once, naming the row.
      expect(await rowB()).toEqual([{ attempt: before?.attempt, lease: null }]);
      const given = logs.find("a claim beside this one took another row of their order key");
      expect(given).toHaveLength(1);
      expect(given[0]?.fields).toMatchObject({ released: 1, unstarted: 1 });
      expect(((given[0]?.fields["ids"] ?? []) as unknown[]).map(Number)).toEqual([b]);

      gates.release(a);
      await until(() => gates.started.length === 2, 10_000, "row B after A settles");
      expect(gates.started).toEqual([a, b]);
      gates.release(b);
      await until(async () => (await ledgerIds(db, table)).length === 0, 10_000, "both rows acked");
      expect(gates.most).toBe(1);
    } finally {
      commit.resolve();
      release.resolve();
      await t1.catch(() => {});
      await stall?.done.catch(() => {});
      gates.releaseAll();
      for (const app of apps) await app.stop();
      await writer.destroy();
      await locker.destroy();
      await engine.dropTable(db, table);
      if (postgres) await sql.raw(`DROP FUNCTION IF EXISTS ${table}_stall()`).execute(db);
    }
  });
  /** Holds an exclusive lock on the table on a connection of its own from when it is granted until `release` resolves. */
  function holdTable(blocker: AnyKysely, table: string, release: Deferred): Promise<void> {
    if (postgres) {
      return blocker.transaction().execute(async (trx) => {
        await sql.raw(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`).execute(trx);
        await release.promise;
      });
    }
    return blocker.connection().execute(async (c) => {
      await sql.raw(`LOCK TABLES ${table} WRITE`).execute(c);
      await release.promise;
      await sql.raw("UNLOCK TABLES").execute(c);
    });
  }

  /** The sessions waiting for the table's lock whose statement starts with `prefix` (lower case). */
  async function waitingOnTable(table: string, prefix: string): Promise<number[]> {
    if (postgres) {
      const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND lower(query) LIKE ${`${prefix}%`} AND query LIKE ${`%${table}%`}`.execute(db);
      return rows.map((r) => Number(r.pid));
    }
    const { rows } = await sql<{ id: number }>`SELECT id FROM information_schema.processlist
      WHERE state LIKE 'Waiting for table metadata lock' AND lower(info) LIKE ${`${prefix}%`} AND info LIKE ${`%${table}%`}`.execute(db);
    return rows.map((r) => Number(r.id));
  }

  test("a check that fails gives every claimed row back, its attempt not spent", async () => {
    const table = unique("ordered_check").toLowerCase();
    const spec = orderedSpecOf(table, "lease");
    await createInboxTable(db, spec);
    await stallClaimOfB(table);
    await insertLedgerRows(db, table, [{ account: 7, priority: 1 }]);
    const [b] = (await ledgerIds(db, table)).map((r) => r.id) as [number];
    const locker: AnyKysely = await engine.connect(url);
    const blocker: AnyKysely = await engine.connect(url);
    const releaseStall = deferred();
    const releaseTable = deferred();
    const runs: Array<{ id: number; attempt: number }> = [];
    const logs = new MemoryLogger();
    let app: { stop(): Promise<unknown> } | undefined;
    let stall: { held: Promise<void>; done: Promise<void> } | undefined;
    let tableHeld: Promise<void> | undefined;
    try {
      stall = holdStall(locker, table, releaseStall);
      await stall.held;
      const queue = InboxQueue.of(spec, "ledger").lease(5000).workers(4).pollInterval(POLL);
      const sub = subscriber(queue, async (_job, ctx) => {
        runs.push({ id: Number(ctx.get(keys.id)), attempt: Number(ctx.get(keys.attempt)) });
        return HandlerOutcome.ack();
      });
      app = await new App({ name: "check-fails", version: "0", logger: logs })
        .withBroker(SqlBroker.fromUrl(url, { pool: { max: 4 } }).route(spec, "ledger"), (bb) => bb.include(sub))
        .start();
      await until(() => claimStalled(table), 10_000, "the claim of B waiting in the trigger");
      // An exclusive lock on the table, queued behind the stalled claim: the check, which runs once that claim
      // commits, waits behind it, and is killed there.
      tableHeld = holdTable(blocker, table, releaseTable);
      await until(async () => (await waitingOnTable(table, "lock")).length > 0, 10_000, "the table lock queued behind the claim");
      releaseStall.resolve();
      let checks: number[] = [];
      await until(
        async () => {
          checks = await waitingOnTable(table, "select");
          return checks.length > 0;
        },
        10_000,
        "the claim's check waiting for the table",
      );
      expect(runs).toEqual([]);
      for (const session of checks) {
        if (postgres) await sql`SELECT pg_terminate_backend(${session})`.execute(db);
        else await sql.raw(`KILL CONNECTION ${session}`).execute(db);
      }
      // The failed check gives B back: that update waits for the table too, until the lock goes.
      await until(async () => (await waitingOnTable(table, "update")).length > 0, 10_000, "the give-back after the failed check");
      expect(runs).toEqual([]);
      releaseTable.resolve();
      await tableHeld;
      await until(() => logs.find("the check of their order keys failed").length > 0, 10_000, "the give-back's log");
      // B went back with its attempt undone, and the next claim ran it once, as its first attempt.
      await until(async () => (await ledgerIds(db, table)).length === 0, 10_000, "row B run and acked");
      expect(runs).toEqual([{ id: b, attempt: 1 }]);
      expect(logs.find("the check of their order keys failed")[0]?.fields).toMatchObject({ released: 1, unstarted: 1 });
    } finally {
      releaseStall.resolve();
      releaseTable.resolve();
      await stall?.done.catch(() => {});
      await tableHeld?.catch(() => {});
      await app?.stop();
      await locker.destroy();
      await blocker.destroy();
      await engine.dropTable(db, table);
      if (postgres) await sql.raw(`DROP FUNCTION IF EXISTS ${table}_stall()`).execute(db);
    }
  });
});
