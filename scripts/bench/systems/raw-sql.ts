import { column, InboxSpec, type InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, type EngineDialect, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import { analyzeTable, connect, countRows, insertJobs, LEASE_PRECISION, recreateTable, tableOf, type AnyDb, type FormName } from "../db.js";
import { sleep, type JobTracker } from "../jobs.js";
import type { DrainCase, EngineName } from "../types.js";
import { loadDialect } from "./dialects.js";

/** The bench table of a form as sqlinbox describes it (the seed's by-hand form). */
export function benchSpec(form: FormName) {
  const base = InboxSpec.table(tableOf(form), column("id").generated()).attempt(column("attempt").generated());
  if (form === "lease") return base.lease(column("locked_until")).payload(column("payload"));
  if (form === "advisory") return base.payload(column("payload")).advisoryLock("job-{id}");
  return base.payload(column("payload"));
}

export const LEASE_MS = 30_000;

const isDeadlock = (e: unknown) => (e as { errno?: number } | null)?.errno === 1213;

/** Where the loop's statements run: the pool, a Kysely transaction, or a connection it holds. */
type Session = { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/**
 * A loop of exactly the statements sqlinbox runs, built by @sqlinbox/kysely-dialects and executed
 * directly with Kysely: `workers` loops, each claiming up to `batch` rows and handling them; the lease
 * form acks a claim's rows in one batched statement (as the runtime coalesces them), the other forms
 * settle one by one, and the row-lock form holds one row per transaction (as the runtime does).
 * What the library adds on top of this is its overhead.
 */
/**
 * `shared`: in the row-lock form one transaction claims `batch` rows and acks them in one statement
 * before its commit (what the runtime does for a batch handler or `.sharedTransaction()`); otherwise
 * one row per transaction. A row-lock transaction is BEGIN … COMMIT on a held connection, as the
 * runtime's (`SessionTransaction`).
 */
export function rawDrainCase(engine: EngineName, form: FormName, batch: number, workers: number, shared = false): DrainCase {
  /** The bench's own connection (table, inserts, counts); `db` is the loop's, opened per drain as sqlinbox's is. */
  let admin: AnyDb | undefined;
  let db: AnyDb | undefined;
  let dialect: EngineDialect | undefined;
  let spec: InboxDescription | undefined;
  let database = "";
  let statements = 0;
  const precision = LEASE_PRECISION[engine];
  const heldKeys = new Set<string>(); // SQLite: advisory locks live in the process; batch loops: the keys another loop holds

  const exec = <R>(q: CompiledQuery<R>, via: Session = db!): Promise<QueryResult<R>> => via.executeQuery(q);
  const one = (r: QueryResult<unknown>, what: string) => {
    if (Number(r.numAffectedRows ?? 0n) !== 1) throw new Error(`raw loop: ${what} affected ${r.numAffectedRows} rows`);
  };

  /** Runs `work` in a transaction, as the runtime does (READ COMMITTED on MariaDB), retrying deadlocks. */
  async function transaction<T>(work: (trx: AnyDb) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        // With an isolation level (MySQL/MariaDB), Kysely's driver sends `SET TRANSACTION ISOLATION LEVEL …` before BEGIN,
        // a round trip of its own; the log counts it, as it does for sqlinbox.
        const iso = dialect!.capabilities.claimIsolation;
        const b = db!.transaction();
        return await (iso ? b.setIsolationLevel(iso) : b).execute((trx) => work(trx as AnyDb));
      } catch (e) {
        if (!isDeadlock(e) || attempt > 20) throw e;
      }
    }
  }

  async function leaseLoop(tracker: JobTracker): Promise<void> {
    const L = dialect!.lease;
    while (tracker.count < tracker.n) {
      const now = new Date();
      const until = dialect!.time.truncate(new Date(now.getTime() + LEASE_MS), precision);
      const options = { limit: batch, now, until, precision };
      const rows: readonly RawRow[] = L.claimsInOneStatement
        ? (await exec(L.claim(spec!, options))).rows
        : await transaction(async (trx) => {
            const selected = (await exec(L.selectClaimable(spec!, options), trx)).rows;
            if (selected.length > 0)
              await exec(
                L.stampClaimed(
                  spec!,
                  selected.map((r) => r.id),
                  until,
                  precision,
                ),
                trx,
              );
            return selected;
          });
      if (rows.length === 0) {
        await sleep(1);
        continue;
      }
      for (const row of rows) tracker.handle(row.payload);
      // The runtime coalesces the acks of a claim's rows into one statement: so does the loop.
      const held = rows.map((row) => ({ id: row.id, held: until }));
      const acked = dialect!.capabilities.updateReturning
        ? (await exec(L.settleAckMany(spec!, held, new Date(), precision))).rows.length
        : await transaction(async (trx) => {
            const found = (await exec(L.selectHeld(spec!, held, precision), trx)).rows.length;
            if (found > 0) await exec(L.settleAckMany(spec!, held, new Date(), precision), trx);
            return found;
          });
      if (acked !== rows.length) throw new Error(`raw loop: lease ack took ${acked} of ${rows.length} rows`);
    }
  }

  /**
   * A row-lock transaction as the runtime opens one: BEGIN (after SET TRANSACTION on MySQL/MariaDB), the work and
   * COMMIT on a connection held from the pool, with Kysely's connection provider and nothing else; deadlocks retried.
   */
  async function sessionTransaction<T>(work: (conn: Session) => Promise<T>): Promise<T> {
    const statements = dialect!.transaction;
    for (let attempt = 0; ; attempt++) {
      try {
        return await db!.getExecutor().provideConnection(async (conn) => {
          for (const q of statements.begin) await conn.executeQuery(q);
          try {
            const result = await work(conn);
            await conn.executeQuery(statements.commit);
            return result;
          } catch (e) {
            await conn.executeQuery(statements.rollback).catch(() => undefined);
            throw e;
          }
        });
      } catch (e) {
        if (!isDeadlock(e) || attempt > 20) throw e;
      }
    }
  }

  async function rowLockLoop(tracker: JobTracker): Promise<void> {
    const R = dialect!.rowLock!;
    while (tracker.count < tracker.n) {
      // One row per transaction, as the runtime's row-lock form does by default: every delivery
      // commits on its own (a crash never takes a neighbour's work with it); `shared`: `batch` rows.
      const got = await sessionTransaction(async (trx) => {
        const rows = (await exec(R.claim(spec!, { limit: shared ? batch : 1, now: new Date() }), trx)).rows;
        if (rows.length === 0) return 0;
        const ids = rows.map((r) => r.id);
        if (spec!.attempt !== undefined && !R.countsInClaim) await exec(R.countAttempts(spec!, ids), trx);
        // One statement acks them all where the engine can (the dialect's own capability); elsewhere one by one.
        if (shared && dialect!.capabilities.heldRowsAckTogether) {
          const ackMany = R.settleAckMany(spec!, ids, new Date());
          // The runtime's shared transaction: every row handled, then one statement acks them all before the commit.
          for (const row of rows) tracker.handle(row.payload);
          const acked = await exec(ackMany, trx);
          if (Number(acked.numAffectedRows ?? 0n) !== rows.length) throw new Error(`raw loop: shared ack took ${acked.numAffectedRows} of ${rows.length} rows`);
          return rows.length;
        }
        for (const row of rows) {
          tracker.handle(row.payload);
          one(await exec(R.settleAck(spec!, row.id, new Date()), trx), "row-lock ack");
        }
        return rows.length;
      });
      if (got === 0) await sleep(1);
    }
  }

  async function advisoryLoop(tracker: JobTracker, conn: AnyDb): Promise<void> {
    const A = dialect!.advisory;
    if (batch > 1 && dialect!.capabilities.advisoryLocks === "session") return advisoryBatchLoop(tracker, conn);
    while (tracker.count < tracker.n) {
      const candidates = (await exec(A.selectCandidates(spec!, { limit: batch, now: new Date() }), conn)).rows;
      let took = 0;
      for (const row of candidates) {
        const key = advisoryKeyOf(spec!, row);
        const sessionLocks = dialect!.capabilities.advisoryLocks === "session";
        if (sessionLocks) {
          const r = await exec(A.tryLock(key, database), conn);
          if (!Number(r.rows[0]?.locked)) continue;
        } else {
          if (heldKeys.has(key)) continue;
          heldKeys.add(key);
        }
        try {
          // The take returns the row it counted (RETURNING), or the engine reads it back on the key's session, as the runtime does.
          const taken = await exec(A.take(spec!, row.id, new Date()), conn);
          let counted = A.takeReturnsRow ? taken.rows[0] : undefined;
          if (!A.takeReturnsRow && Number(taken.numAffectedRows ?? 0n) === 1) counted = (await exec(A.readTaken(spec!, row.id), conn)).rows[0];
          if (counted === undefined) continue; // another worker finished it meanwhile
          tracker.handle(counted.payload);
          one(await exec(A.settleAck(spec!, row.id, new Date()), conn), "advisory ack");
          took++;
        } finally {
          if (sessionLocks) await exec(A.unlock(key, database), conn);
          else heldKeys.delete(key);
        }
      }
      if (took === 0) await sleep(1);
    }
  }

  /**
   * The advisory batch claim's statements, as the runtime runs them at batch(n) above 1: the first row of each key no
   * other loop holds, every key tried in one statement, the locked rows taken in one (read back on MySQL/MariaDB),
   * then one ack and one unlock for the batch.
   */
  async function advisoryBatchLoop(tracker: JobTracker, conn: AnyDb): Promise<void> {
    const A = dialect!.advisory;
    while (tracker.count < tracker.n) {
      // Past the rows the other loops hold, as the runtime reads past the keys its batches hold.
      const candidates = (await exec(A.selectCandidates(spec!, { limit: batch * (workers + 1), now: new Date() }), conn)).rows;
      const picked: { id: unknown; key: string }[] = [];
      for (const row of candidates) {
        const key = advisoryKeyOf(spec!, row);
        if (heldKeys.has(key)) continue;
        heldKeys.add(key);
        picked.push({ id: row.id, key });
        if (picked.length === batch) break;
      }
      let took = 0;
      try {
        if (picked.length > 0) {
          const tried =
            (
              await exec(
                A.tryLockMany(
                  picked.map((p) => p.key),
                  database,
                ),
                conn,
              )
            ).rows[0] ?? {};
          const locked = picked.filter((_, i) => Number(tried[String(i)]) === 1 || tried[String(i)] === true);
          if (locked.length > 0) {
            const ids = locked.map((p) => p.id);
            const now = new Date();
            const taken = await exec(A.takeMany(spec!, ids, now), conn);
            const rows = A.takeReturnsRow ? taken.rows : (await exec(A.readTakenMany(spec!, ids, now), conn)).rows;
            for (const row of rows) tracker.handle(row.payload);
            if (rows.length > 0)
              await exec(
                A.settleAckMany(
                  spec!,
                  rows.map((r) => r.id),
                  new Date(),
                ),
                conn,
              );
            await exec(
              A.unlockMany(
                locked.map((p) => p.key),
                database,
              ),
              conn,
            );
            took = rows.length;
          }
        }
      } finally {
        for (const p of picked) heldKeys.delete(p.key);
      }
      if (took === 0) await sleep(1);
    }
  }

  return {
    id: `raw-sql/${engine}/${form}/b${batch}-w${workers}${shared ? "-shared" : ""}`,
    system: "raw-sql",
    engine,
    variant: form,
    settings: { batch, workers, leaseMs: form === "lease" ? LEASE_MS : undefined, ...(shared ? { rowsPerTransaction: batch } : {}) },
    async check() {
      if (engine === "sqlite" && form === "rowLock") return "SQLite has no row locks";
      const d = await loadDialect(engine);
      if (typeof d === "string") return d;
      dialect = d;
      return null;
    },
    async setup() {
      admin = connect(engine, 2);
      spec = benchSpec(form).description;
      const r = await admin.executeQuery(dialect!.schema.currentDatabase());
      database = String(r.rows[0]?.name ?? "");
    },
    async reset() {
      await recreateTable(admin!, engine, form);
    },
    async insert(n) {
      await insertJobs(admin!, form, n);
    },
    async analyze() {
      await analyzeTable(admin!, engine, tableOf(form));
    },
    async drain(tracker) {
      statements = 0;
      // A pool of its own, opened inside the timed drain as sqlinbox's is (same size): neither side drains on
      // a connection that inserted the rows (SQLite: a page cache already warm with the table).
      // Its statements are counted as sqlinbox's are, by the Kysely's `log` (BEGIN, COMMIT and MySQL's SET TRANSACTION included):
      // both sides pay Kysely's per-statement logging wrapper, not sqlinbox alone.
      db = connect(engine, workers + 4, () => void statements++);
      try {
        const loops = Array.from({ length: workers }, () =>
          form === "lease" ? leaseLoop(tracker) : form === "rowLock" ? rowLockLoop(tracker) : db!.connection().execute((conn) => advisoryLoop(tracker, conn as AnyDb)),
        );
        await Promise.all(loops);
      } finally {
        await db.destroy();
        db = undefined;
      }
      const left = await countRows(admin!, form);
      if (left !== 0) throw new Error(`raw loop: ${left} rows left after the drain`);
      return { processed: tracker.count, statements };
    },
    async teardown() {
      await admin?.destroy();
    },
  };
}
