/**
 * A lease claim that returns late, on every engine: its statement stalled (a Galera cluster
 * reforming after a node died, a pool or an event loop starved under load) until the deadlines it
 * wrote had run out, so the rows may be another claim's already. None of them starts: each lease is
 * lost, warned as such, and the row is delivered once, by a later claim that holds it. The stall is
 * made by the app's clock moving on while a claim statement runs (the test's statement hook), so
 * it is the same on every engine and needs no real wait.
 *
 * And a claim tried again after a deadlock (MySQL/MariaDB: a certification failure on Galera) reads
 * the clock again: the retry writes a deadline from its own time, not from the failed try's.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { sleepOn, type Clock, type Timer } from "../../../src/clock.js";
import type { AnyKysely, Database } from "../../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, subscriber, type LogFields, type Logger, type RunningApp } from "../../../src/index.js";
import { runningBrokers } from "../../../src/internal.js";
import { createJobsTable, insertJobs, jobsSpecOf, until } from "../../support/claim-forms.js";
import { engines, unique } from "../../support/engines.js";
import { useEngineConnection } from "../../support/fixtures.js";

const LEASE_MS = 2000;
const ROWS = 3;

/** The host's clock, moved on by `shift` ms: what a stall looks like from inside the process. */
class MovableClock implements Clock {
  shift = 0;
  now(): Date {
    return new Date(Date.now() + this.shift);
  }
  setTimer(ms: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
}

interface Start {
  readonly id: number;
  readonly attempt: number;
  /** How long the lease the delivery started with still held, on the app's clock. */
  readonly leftMs: number;
}

function lateApp(url: string, table: string, pollMs = 50) {
  const clock = new MovableClock();
  const starts: Start[] = [];
  const warnings: string[] = [];
  const errors: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (_fields: LogFields, message: string) => void warnings.push(message),
    error: (_fields: LogFields, message: string) => void errors.push(message),
  };
  const spec = jobsSpecOf(table, "lease");
  const jobs = subscriber(InboxQueue.of(spec, "jobs").workers(ROWS).batch(ROWS).pollInterval(pollMs), async (_job, ctx) => {
    const leftMs = ctx.get(keys.leaseDeadline).getTime() - ctx.now().getTime();
    starts.push({ id: Number(ctx.id), attempt: ctx.get(keys.attempt), leftMs });
    return HandlerOutcome.ack();
  });
  // The host's clock as it is: the test moves it, and no measured offset to the database's corrects the move.
  const broker = SqlBroker.fromUrl(url, { pool: { max: ROWS + 2 } })
    .lease(LEASE_MS)
    .route(spec, "jobs");
  const app = new App({ name: "late-claim", version: "0", logger, clock, leaseClock: "host" }).withBroker(broker, (b) => b.include(jobs));
  return { app, broker, clock, starts, warnings, errors };
}

/**
 * Calls `stall` as each claim statement of `running` goes to the database, after the claim read its times:
 * a claim of one statement (Postgres, SQLite) once the statement is built, a claim of a transaction
 * (MySQL/MariaDB) at each statement in it. An error `stall` returns is the statement's; a deadlock makes
 * the claim go again (one statement, or the whole transaction). Installed once no statement of the app runs.
 */
async function onClaimStatements(running: RunningApp, stall: () => Error | undefined): Promise<void> {
  const database: Database | undefined = runningBrokers.get(running)?.[0]?.connection.database;
  if (database === undefined) throw new Error("the app's database is not open");
  // No claim in flight that read its times before this: the first claims of the start may still wait for a connection.
  await until(() => database.running === 0, 5_000, "the app's statements done");
  const execute = database.execute.bind(database);
  const executeBuilt = database.executeBuilt.bind(database);
  database.executeBuilt = (kind, build) =>
    executeBuilt(kind, () => {
      const query = build();
      const error = kind === "claim" ? stall() : undefined;
      if (error !== undefined) throw error;
      return query;
    });
  database.execute = (kind, query, via) => {
    const error = kind === "claim" ? stall() : undefined;
    return error === undefined ? execute(kind, query, via) : Promise.reject(error);
  };
}

describe.each(engines)("a lease claim that returns late, on $name", (engine) => {
  let db!: AnyKysely;
  let url = "";
  const table = unique("rt_late").toLowerCase();
  useEngineConnection(engine, (connected) => {
    ({ db, url } = connected);
  });
  beforeAll(() => createJobsTable(engine, db, table));
  afterAll(() => engine.dropTable(db, table));

  test("rows whose leases ran out while the claim ran are not started: each lease is lost (warned), each row runs once, later", { timeout: 30_000 }, async () => {
    const c = lateApp(url, table);
    const running = await c.app.start();
    try {
      // Every claim statement stalls past the lease (the clock moves 1.5 leases while it runs) until one returned rows.
      await onClaimStatements(running, () => {
        if (c.starts.length === 0 && !c.warnings.some((w) => w.startsWith("lease lost"))) c.clock.shift += LEASE_MS * 1.5;
        return undefined;
      });
      await insertJobs(db, table, ROWS);
      await until(() => new Set(c.starts.map((s) => s.id)).size === ROWS, 10_000, "every row started");
      // Every delivery started while its lease held; none started on a lease the late claim wrote.
      expect(c.starts.filter((s) => s.leftMs <= 0)).toEqual([]);
      expect(c.starts.map((s) => s.attempt)).toEqual([2, 2, 2]);
      expect(c.starts).toHaveLength(ROWS);
      expect(c.warnings.filter((w) => w.startsWith("lease lost"))).toEqual(Array(ROWS).fill("lease lost: it ran out before its delivery started"));
      expect(c.errors).toEqual([]);
      await until(async () => (await db.selectFrom(table).select("id").execute()).length === 0, 10_000, "every row acked");
    } finally {
      await running.stop();
    }
  });

  test("a claim tried again after a deadlock reads the clock again: its rows start on a lease that holds", { timeout: 30_000 }, async () => {
    // No poll within the test: a claim runs when a publish of this process wakes the subscription.
    const c = lateApp(url, table, 60_000);
    const running = await c.app.start();
    const deadlock = (): Error => Object.assign(new Error("Deadlock found when trying to get lock (simulated by the test)"), { errno: 1213, code: "ER_LOCK_DEADLOCK" });
    let failed = 0;
    try {
      // The first try of the next claim stalls for 1.5 leases, then fails as a deadlock: the claim goes again.
      await onClaimStatements(running, () => {
        if (failed > 0) return undefined;
        failed++;
        c.clock.shift += LEASE_MS * 1.5;
        return deadlock();
      });
      for (let n = 0; n < ROWS; n++) await c.broker.publish("jobs", { n }, { columns: { k: `row-${n}` } });
      await until(() => new Set(c.starts.map((s) => s.id)).size === ROWS, 10_000, "every row started");
      expect(failed).toBe(1);
      expect(c.starts.filter((s) => s.leftMs <= LEASE_MS / 2)).toEqual([]);
      expect(c.starts.map((s) => s.attempt)).toEqual([1, 1, 1]);
      expect(c.warnings.filter((w) => w.startsWith("lease lost"))).toEqual([]);
      expect(c.warnings).toContain("deadlock retried");
      expect(c.errors).toEqual([]);
      await until(async () => (await db.selectFrom(table).select("id").execute()).length === 0, 10_000, "every row acked");
    } finally {
      await running.stop();
    }
  });
});
