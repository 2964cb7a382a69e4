import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { AdvisoryStatements, ClaimOptions, RawRow } from "../types.js";
import { takeQuery } from "../shared/advisory-take.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, lockedRetryQuery } from "../shared/settlement.js";
import { postgresContext as ctx } from "./query-builder.js";

/** `select <described columns> from "t" where <claimable> order by … limit $n` — no lock: keys decide. */
export function selectAdvisoryCandidates(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, false));
}

/**
 * `select pg_try_advisory_lock(hashtextextended($1, 0)) as "locked"` — a session lock on the
 * key's 64-bit hash (Postgres 11+), taken without waiting. Advisory locks are per database,
 * so `database` is not needed. Needs a session of its own: not PgBouncer in transaction mode.
 */
export function tryAdvisoryLock(key: string): CompiledQuery<{ locked: unknown }> {
  return compiled(
    ctx.db.selectNoFrom((eb) => eb.fn("pg_try_advisory_lock", [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as("locked")),
  );
}

/** `select pg_advisory_unlock(hashtextextended($1, 0)) as "unlocked"`. */
export function advisoryUnlock(key: string): CompiledQuery {
  return compiled(
    ctx.db.selectNoFrom((eb) => eb.fn("pg_advisory_unlock", [eb.fn("hashtextextended", [eb.val(key), eb.lit(0)])]).as("unlocked")),
  );
}

/** `update "t" set "attempt" = "attempt" + 1 where "id" = $1 and <claimable>`: one row affected, or the row is gone. */
export function takeAdvisory(spec: InboxDescription, id: unknown, now: Date): CompiledQuery {
  return takeQuery(ctx, spec, id, now);
}

export const postgresAdvisory: AdvisoryStatements = Object.freeze({
  selectCandidates: selectAdvisoryCandidates,
  tryLock: tryAdvisoryLock,
  unlock: advisoryUnlock,
  take: takeAdvisory,
  settleAck: (spec: InboxDescription, id: unknown, now: Date) => ackQuery(ctx, spec, id, now),
  settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date | null) => lockedRetryQuery(ctx, spec, id, retryAt),
});
