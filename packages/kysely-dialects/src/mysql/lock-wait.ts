import { sql } from "kysely";
import type { LockWaitTraits } from "../forms/engine-traits.js";
import { mysqlDb as db } from "./query-builder.js";

/**
 * MySQL/MariaDB bound a row lock's wait with the session's `innodb_lock_wait_timeout`, in whole
 * seconds (1 at the least): the session's value is kept in a user variable and set back before the
 * transaction's other statements run, so the connection goes back to the pool as it came. A wait
 * past it fails with error 1205 (ER_LOCK_WAIT_TIMEOUT), which rolls back that statement alone.
 *
 * @example
 * ```sql mysql:lockWait.bound
 * set @sqlinbox_lock_wait = @@innodb_lock_wait_timeout, innodb_lock_wait_timeout = 1
 * ```
 * ```sql mysql:lockWait.unbound
 * set innodb_lock_wait_timeout = @sqlinbox_lock_wait
 * ```
 */
export const mysqlLockWait: LockWaitTraits = Object.freeze({
  bound: (ms: number) => sql`set @sqlinbox_lock_wait = @@innodb_lock_wait_timeout, innodb_lock_wait_timeout = ${sql.lit(Math.max(1, Math.ceil(ms / 1000)))}`.compile(db),
  unbound: () => sql`set innodb_lock_wait_timeout = @sqlinbox_lock_wait`.compile(db),
  // InnoDB rolls back the waiting statement alone (innodb_rollback_on_timeout is off by default), and a
  // session variable is no part of a transaction: the bound is set back before the rollback too.
  timeoutAbortsTransaction: false,
  timedOut: (error: unknown) => {
    const e = error as { errno?: unknown; code?: unknown } | null;
    return e?.errno === 1205 || e?.code === "ER_LOCK_WAIT_TIMEOUT";
  },
});
