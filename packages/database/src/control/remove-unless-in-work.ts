import type { InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, type EngineDialect } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import type { AnyKysely } from "../drivers/types.js";

type On = { executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>> };

/**
 * Takes row `id` out of its queue unless something holds it; `true` when it did. What "in work"
 * means per form: a live lease (the lease form: the condition is in the statement, judged at `now`,
 * the database's time), a claim's row lock (row lock: `FOR UPDATE SKIP LOCKED` passes it by), or a
 * lock on the row's key (advisory: tried without waiting; SQLite's keys live in the app's process,
 * so there the row is removed and a delivery in work is told by the cancel request).
 */
export async function removeUnlessInWork(db: AnyKysely, dialect: EngineDialect, spec: InboxDescription, id: unknown, now: Date): Promise<boolean> {
  return writeUnlessInWork(db, dialect, spec, id, dialect.control.removeQueued(spec, id, now));
}

/**
 * The keys in work in the application's process, where advisory keys live there (SQLite): a write
 * holds the row's key while it runs, as a claim would, so no claim of that process takes the row meanwhile.
 */
export interface ProcessKeys {
  has(key: string): boolean;
  hold(key: string): void;
  drop(key: string): void;
}

/**
 * Runs `write` (a statement on row `id` whose condition excludes a row done or under a live lease)
 * unless a claim holds the row, as `removeUnlessInWork` judges it per form; `true` when it changed
 * the row. Where advisory keys live in the process, `processKeys` (that process's) fences it; without
 * them the row's key is not judged there.
 */
export async function writeUnlessInWork(
  db: AnyKysely,
  dialect: EngineDialect,
  spec: InboxDescription,
  id: unknown,
  write: CompiledQuery,
  processKeys?: ProcessKeys,
): Promise<boolean> {
  const control = dialect.control;
  const remove = async (on: On): Promise<boolean> => Number((await on.executeQuery(write)).numAffectedRows ?? 0n) > 0;
  if (spec.form === "rowLock" && dialect.capabilities.rowLock) {
    const lock = control.lockQueued(spec, id);
    const isolation = dialect.capabilities.claimIsolation;
    const builder = db.transaction();
    return (isolation === undefined ? builder : builder.setIsolationLevel(isolation)).execute(async (trx) => {
      if ((await trx.executeQuery(lock)).rows.length === 0) return false;
      return remove(trx);
    });
  }
  if (spec.form === "advisory" && dialect.capabilities.advisoryLocks === "session") {
    const row = (await db.executeQuery(control.findRow(spec, id))).rows[0];
    if (row === undefined) return false;
    const key = advisoryKeyOf(spec, row);
    return db.connection().execute(async (session) => {
      // The lock names' database, as the advisory claim names it: the table's own schema, else the connection's.
      const database = spec.schema ?? String((await session.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "");
      const tryLock = dialect.advisory.tryLock(key, database);
      const unlock = dialect.advisory.unlock(key, database);
      const locked = (await session.executeQuery(tryLock)).rows[0]?.locked;
      if (!(locked === true || Number(locked) === 1)) return false;
      try {
        return await remove(session);
      } finally {
        await session.executeQuery(unlock);
      }
    });
  }
  if (spec.form === "advisory" && processKeys !== undefined) {
    const row = (await db.executeQuery(control.findRow(spec, id))).rows[0];
    if (row === undefined) return false;
    const key = advisoryKeyOf(spec, row);
    if (processKeys.has(key)) return false;
    processKeys.hold(key);
    try {
      return await remove(db);
    } finally {
      processKeys.drop(key);
    }
  }
  // The lease form's condition is in the statement; SQLite's advisory keys live in the app's process.
  return remove(db);
}
