import { sql } from "kysely";
import type { LockWaitTraits } from "../forms/engine-traits.js";
import { compiled } from "../statements/query-db.js";
import { postgresDb as db } from "./query-builder.js";

/**
 * Postgres bounds a transaction's lock waits with `lock_timeout`, set for the transaction alone
 * (`set_config(…, true)`) and set back to the session's own value (`SET LOCAL … TO DEFAULT`) before
 * the transaction's other statements run. A wait past it fails with SQLSTATE 55P03 (lock_not_available).
 *
 * @example
 * ```sql postgres:lockWait.bound
 * select set_config('lock_timeout', $1, true) as "lock_timeout"
 * ```
 * ```sql postgres:lockWait.unbound
 * set local lock_timeout to default
 * ```
 */
export const postgresLockWait: LockWaitTraits = Object.freeze({
  bound: (ms: number) =>
    compiled(db.selectNoFrom((eb) => eb.fn("set_config", [sql.lit("lock_timeout"), eb.val(`${Math.max(1, Math.ceil(ms))}ms`), eb.lit(true)]).as("lock_timeout"))),
  unbound: () => sql`set local lock_timeout to default`.compile(db),
  // Any failed statement aborts a Postgres transaction: the claim rolls back, and `set_config(…, true)` with it.
  timeoutAbortsTransaction: true,
  timedOut: (error: unknown) => (error as { code?: unknown } | null)?.code === "55P03",
});
