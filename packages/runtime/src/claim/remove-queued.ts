import type { InboxDescription } from "@sqlinbox/core/internal";
import { advisoryKeyOf, type EngineDialect } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery } from "kysely";
import type { AnyKysely, AnyTransaction } from "../drivers/database.js";

type On = { executeQuery<R>(query: CompiledQuery<R>): Promise<import("kysely").QueryResult<R>> };

/**
 * What "in work" means per form, for a cancel: a live lease (the lease form: the condition is in
 * the statement), a claim's row lock (row lock: `FOR UPDATE SKIP LOCKED` passes it by), or a lock
 * on the row's key (advisory: tried without waiting; SQLite's keys live in the app's process, so
 * there the row is removed and a delivery in work is told by the cancel request).
 */
/** Takes the row out of its queue unless something holds it; `true` when it did. */
export async function removeUnlessInWork(dialect: EngineDialect, db: AnyKysely, spec: InboxDescription, id: unknown, now: Date): Promise<boolean> {
  const control = dialect.control;
  const remove = async (on: On): Promise<boolean> => Number((await on.executeQuery(control.removeQueued(spec, id, now))).numAffectedRows ?? 0n) > 0;
  const lock = control.lockQueued(spec, id);
  if (spec.form === "rowLock" && lock !== null) {
    const isolation = dialect.capabilities.claimIsolation;
    const builder = db.transaction();
    return (isolation === undefined ? builder : builder.setIsolationLevel(isolation)).execute(async (trx: AnyTransaction) => {
      if ((await trx.executeQuery(lock)).rows.length === 0) return false;
      return remove(trx);
    });
  }
  if (spec.form === "advisory" && dialect.capabilities.advisoryLocks === "session") {
    const rows = (await db.executeQuery(control.findRow(spec, id))).rows;
    const row = rows[0];
    if (row === undefined) return false;
    const key = advisoryKeyOf(spec, row);
    return db.connection().execute(async (session) => {
      // The lock names' database, as the advisory claim names it: the table's own schema, else the connection's.
      const database = spec.schema ?? String((await session.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "");
      const tryLock = dialect.advisory.tryLock(key, database);
      const unlock = dialect.advisory.unlock(key, database);
      if (tryLock === null || unlock === null) return remove(session);
      const locked = (await session.executeQuery(tryLock)).rows[0]?.locked;
      if (!(locked === true || Number(locked) === 1)) return false;
      try {
        return await remove(session);
      } finally {
        await session.executeQuery(unlock);
      }
    });
  }
  // The lease form's condition is in the statement; SQLite's advisory keys live in the app's process.
  return remove(db);
}
