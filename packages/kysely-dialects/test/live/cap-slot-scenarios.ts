import { sql, type ControlledTransaction } from "kysely";
import { expect, test } from "vitest";
import { innodbTransactions } from "../../../../test/support/innodb-status.js";
import { run, uniqueTable, type LiveEngine } from "../support/servers.js";

/** Opens a transaction the way a row-lock claim does (READ COMMITTED on MySQL/MariaDB). */
// biome-ignore lint/suspicious/noExplicitAny: test tables are created at run time
async function begin(engine: LiveEngine): Promise<ControlledTransaction<any>> {
  let trx = engine.db.startTransaction();
  if (engine.dialect.capabilities.claimIsolation !== undefined) trx = trx.setIsolationLevel(engine.dialect.capabilities.claimIsolation);
  return trx.execute();
}

/** The session's own lock wait bound, as the engine shows it. */
// biome-ignore lint/suspicious/noExplicitAny: test tables are created at run time
async function lockWaitOf(engine: LiveEngine, tx: ControlledTransaction<any>): Promise<string> {
  const query = engine.name === "postgres" ? sql<{ v: unknown }>`select current_setting('lock_timeout') as v` : sql<{ v: unknown }>`select @@innodb_lock_wait_timeout as v`;
  return String((await query.execute(tx)).rows[0]?.v);
}

/** The session id of a transaction's connection, as the server's lock views name it. */
// biome-ignore lint/suspicious/noExplicitAny: test tables are created at run time
async function sessionOf(engine: LiveEngine, tx: ControlledTransaction<any>): Promise<number> {
  const query = engine.name === "postgres" ? sql<{ id: unknown }>`select pg_backend_pid() as id` : sql<{ id: unknown }>`select connection_id() as id`;
  return Number((await query.execute(tx)).rows[0]?.id);
}

/**
 * Resolves once the server shows `session` waiting for a row lock (a fixed sleep is not enough on a
 * loaded machine: the wait's statement may not have reached the server when the holder commits).
 * MySQL/MariaDB: from the InnoDB status, not `INNODB_TRX`, which a poll keeps from being refreshed.
 */
async function untilWaiting(engine: LiveEngine, session: number): Promise<void> {
  const waiting = async (): Promise<boolean> => {
    if (engine.name !== "postgres") return (await innodbTransactions(engine.db)).some((t) => t.session === session && t.lockWait);
    const query = sql<{ n: unknown }>`select count(*) as n from pg_stat_activity where pid = ${session} and wait_event_type = 'Lock'`;
    return Number((await query.execute(engine.db)).rows[0]?.n) > 0;
  };
  const deadline = Date.now() + 10_000;
  while (!(await waiting())) {
    if (Date.now() > deadline) {
      // What the server shows of the session instead: the next failure says where it was.
      const seen =
        engine.name === "postgres"
          ? sql`select state, wait_event_type, wait_event, query from pg_stat_activity where pid = ${session}`
          : sql`select command, state, info from information_schema.processlist where id = ${session}`;
      throw new Error(`session ${session} never waited for the slot's lock: ${JSON.stringify((await seen.execute(engine.db)).rows)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A cap's slot queue on a live engine with row locks (Postgres, MariaDB): `flow.waitCapSlot` inside `flow.lockWait`. */
export function capSlotScenarios(get: () => LiveEngine): void {
  test("cap slots: a slot freed goes to the transaction waiting for it, not to a claim that skips locked slots right after (on Postgres: or to that claim, and then to the waiter, never to both); a wait past its bound fails as timed out, and the session's bound is set back", async () => {
    const engine = get();
    const { flow } = engine.dialect;
    await run(engine.db, flow.createSlotTable());
    const place = { name: `cap:${uniqueTable("fair")}` };
    await run(engine.db, flow.ensureSlots(place, 1));
    const holder = await begin(engine);
    const waiter = await begin(engine);
    const latecomer = await begin(engine);
    const timedOut = await begin(engine);
    try {
      const before = await lockWaitOf(engine, waiter);
      const waiterSession = await sessionOf(engine, waiter);
      expect((await run(holder, flow.lockCapSlots(place, 1, 1))).rows.map((r) => Number(r.slot))).toEqual([0]);
      expect((await run(waiter, flow.lockCapSlots(place, 1, 1))).rows).toEqual([]);
      // Bounded past the wait for it below (a loaded server may take seconds to show the wait), and short enough
      // that a failure's rollback, queued behind this statement on its connection, ends within the test's time.
      await run(waiter, flow.lockWait.bound(15_000));
      const waiting = run(waiter, flow.waitCapSlot(place, 0));
      // Failing while the test waits elsewhere, it is awaited below: not an unhandled rejection meanwhile.
      waiting.catch(() => {});
      // The waiter queues behind the holder; then the holder's transaction ends and another claim tries at once.
      await untilWaiting(engine, waiterSession);
      await holder.commit().execute();
      const skipped = (await run(latecomer, flow.lockCapSlots(place, 1, 1))).rows.map((r) => Number(r.slot));
      if (engine.name === "postgres" && skipped.length > 0) {
        // Postgres gives the row to its waiter only when the waiter next runs: a claim in that instant can take it
        // first (on a loaded machine, a few in a hundred). The waiter then waits for that claim's transaction, and
        // gets the slot when it ends: never two holders.
        expect(skipped).toEqual([0]);
        await latecomer.commit().execute();
      } else {
        // MySQL/MariaDB: InnoDB grants the lock to the waiter as the holder's commit releases it.
        expect(skipped).toEqual([]);
      }
      expect((await waiting).rows.map((r) => Number(r.slot))).toEqual([0]);
      await run(waiter, flow.lockWait.unbound());
      expect(await lockWaitOf(engine, waiter)).toBe(before);

      // Now the waiter holds the slot: a wait bounded to 1 s runs out.
      await run(timedOut, flow.lockWait.bound(1000));
      const started = Date.now();
      const failure = await run(timedOut, flow.waitCapSlot(place, 0)).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(flow.lockWait.timedOut(failure)).toBe(true);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(Date.now() - started).toBeLessThan(5000);
      if (!flow.lockWait.timeoutAbortsTransaction) {
        await run(timedOut, flow.lockWait.unbound());
        expect(await lockWaitOf(engine, timedOut)).toBe(before);
      }
    } finally {
      for (const tx of [holder, waiter, latecomer, timedOut]) if (!tx.isCommitted && !tx.isRolledBack) await tx.rollback().execute();
    }
  }, 60_000);
}
