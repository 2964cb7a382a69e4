import { column, InboxSpec, type InboxDescription } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import { onTestFinished } from "vitest";
import type { ClaimOptions, HeldLease, LeaseClaimOptions, RawRow } from "../../src/index.js";
import { fifoRuleApplies } from "../../src/internal.js";
import { run, uniqueTable, type Db, type LiveEngine } from "../support/servers.js";

/** Creates a uniquely named jobs table, dropped when the test finishes. */
export async function jobsTable(engine: LiveEngine, prefix: string, leaseType?: string): Promise<string> {
  const table = uniqueTable(prefix);
  await engine.createJobsTable(table, leaseType);
  onTestFinished(async () => {
    await sql`drop table if exists ${sql.id(table)}`.execute(engine.db);
  });
  return table;
}

/** The seed's shape: generated id and attempt, a lease, a payload. */
export const seedSpec = (table: string): InboxDescription =>
  InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).lease(column("locked_until")).payload(column("payload")).description;

/** Publishes rows and returns their new ids (RETURNING, or MySQL's consecutive insertId). */
export async function publish(engine: LiveEngine, spec: InboxDescription, rows: readonly RawRow[]): Promise<number[]> {
  const result = await run(engine.db, engine.dialect.publish.insert(spec, rows));
  if (engine.dialect.capabilities.insertReturning) return result.rows.map((r) => Number(r[spec.id.name]));
  const first = Number(result.insertId);
  return rows.map((_, i) => first + i);
}

const isDeadlock = (error: unknown): boolean => (error as { errno?: number }).errno === 1213;

/** Retries a MySQL/MariaDB deadlock (InnoDB 1213), as the runtime does. */
export async function retryingDeadlocks<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isDeadlock(error) || attempt > 20) throw error;
    }
  }
}

/**
 * A lease claim the way the runtime runs it: one statement where the engine has one,
 * else `selectClaimable` + `stampClaimed` in one short READ COMMITTED transaction (a fifo table:
 * `lockFifoGroup` first, its row count given to the select).
 * Returns the claimed ids.
 */
export async function claimLease(engine: LiveEngine, spec: InboxDescription, options: LeaseClaimOptions): Promise<number[]> {
  const { lease, capabilities } = engine.dialect;
  if (lease.claimsInOneStatement) return (await run(engine.db, lease.claim(spec, options))).rows.map((r) => Number(r[spec.id.name]));
  return retryingDeadlocks(() =>
    engine.db
      .transaction()
      .setIsolationLevel(capabilities.claimIsolation ?? "read committed")
      .execute(async (trx) => {
        const fifo = fifoRuleApplies(spec, options) ? { fifoLocked: (await run(trx, lease.lockFifoGroup(spec, options))).rows.length } : {};
        const rows = (await run(trx, lease.selectClaimable(spec, { ...options, ...fifo }))).rows;
        const ids = rows.map((r) => Number(r[spec.id.name]));
        if (ids.length > 0) await run(trx, lease.stampClaimed(spec, ids, options.until, options.precision));
        return ids;
      }),
  );
}

/**
 * A batched ack the way the runtime runs it: one `settleAckMany` returning the acked ids where
 * the engine has RETURNING, else `selectHeld` (locking the held rows) then `settleAckMany` in
 * one short READ COMMITTED transaction. Returns the ids acked.
 */
export async function ackMany(engine: LiveEngine, spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): Promise<number[]> {
  const { lease, capabilities } = engine.dialect;
  if (capabilities.updateReturning) return (await run(engine.db, lease.settleAckMany(spec, leases, now, precision))).rows.map((r) => Number(r[spec.id.name]));
  return retryingDeadlocks(() =>
    engine.db
      .transaction()
      .setIsolationLevel(capabilities.claimIsolation ?? "read committed")
      .execute(async (trx) => {
        const ids = new Set((await run(trx, lease.selectHeld(spec, leases, precision))).rows.map((r) => String(r[spec.id.name])));
        const mine = leases.filter((l) => ids.has(String(l.id)));
        if (mine.length === 0) return [];
        const result = await run(trx, lease.settleAckMany(spec, mine, now, precision));
        if (Number(result.numAffectedRows ?? 0n) !== mine.length) throw new Error(`ackMany: ${result.numAffectedRows} rows for ${mine.length} held`);
        return mine.map((l) => Number(l.id));
      }),
  );
}

/** Opens a row-lock delivery transaction, claims (a fifo table: `lockFifoGroup` first) and counts; the caller commits or rolls back. */
export async function claimRowLocked(engine: LiveEngine, spec: InboxDescription, options: ClaimOptions) {
  const rowLock = engine.dialect.rowLock;
  if (!engine.dialect.capabilities.rowLock) throw new Error(`${engine.name} has no row lock`);
  let trx = engine.db.startTransaction();
  if (engine.dialect.capabilities.claimIsolation !== undefined) trx = trx.setIsolationLevel(engine.dialect.capabilities.claimIsolation);
  const tx = await trx.execute();
  const fifo = fifoRuleApplies(spec, options) && !rowLock.claimLocksFifoGroup ? { fifoLocked: (await run(tx, rowLock.lockFifoGroup(spec, options))).rows.length } : {};
  const rows = (await run(tx, rowLock.claim(spec, { ...options, ...fifo }))).rows;
  const ids = rows.map((r) => Number(r[spec.id.name]));
  if (spec.attempt !== undefined && !rowLock.countsInClaim && ids.length > 0) await run(tx, rowLock.countAttempts(spec, ids));
  return { tx, ids, rows };
}

/** Reads rows by id: column name to raw value. */
export async function readRows(db: Db, table: string): Promise<RawRow[]> {
  return (await sql<RawRow>`select * from ${sql.id(table)} order by id`.execute(db)).rows;
}

export const seconds = (n: number): number => n * 1000;
