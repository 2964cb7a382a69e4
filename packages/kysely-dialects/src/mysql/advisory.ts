import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { AdvisoryStatements, ClaimOptions, RawRow } from "../types.js";
import { mysqlLockName } from "../shared/advisory-key.js";
import { takeQuery } from "../shared/advisory-take.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, lockedRetryQuery } from "../shared/settlement.js";
import { mysqlContext as ctx } from "./query-builder.js";

/** ``select … from `t` where <claimable> order by … limit ?`` — no lock: keys decide. */
export function selectAdvisoryCandidates(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, false));
}

/**
 * ``select GET_LOCK(?, 0) as `locked` `` — a user lock held by the session, taken without
 * waiting; 1 taken, 0 held elsewhere. The name is `database.key`, hashed (SHA-256 hex) past 64 characters.
 */
export function tryAdvisoryLock(key: string, database: string): CompiledQuery<{ locked: unknown }> {
  return compiled(ctx.db.selectNoFrom((eb) => eb.fn("GET_LOCK", [eb.val(mysqlLockName(database, key)), eb.lit(0)]).as("locked")));
}

/** ``select RELEASE_LOCK(?) as `unlocked` ``. */
export function advisoryUnlock(key: string, database: string): CompiledQuery {
  return compiled(ctx.db.selectNoFrom((eb) => eb.fn("RELEASE_LOCK", [eb.val(mysqlLockName(database, key))]).as("unlocked")));
}

/** ``update `t` set `attempt` = `attempt` + 1 where `id` = ? and <claimable>``: one row affected, or the row is gone. */
export function takeAdvisory(spec: InboxDescription, id: unknown, now: Date): CompiledQuery {
  return takeQuery(ctx, spec, id, now);
}

export const mysqlAdvisory: AdvisoryStatements = Object.freeze({
  selectCandidates: selectAdvisoryCandidates,
  tryLock: tryAdvisoryLock,
  unlock: advisoryUnlock,
  take: takeAdvisory,
  settleAck: (spec: InboxDescription, id: unknown, now: Date) => ackQuery(ctx, spec, id, now),
  settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date | null) => lockedRetryQuery(ctx, spec, id, retryAt),
});
