import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { AdvisoryStatements, ClaimOptions, RawRow } from "../types.js";
import { takeQuery } from "../shared/advisory-take.js";
import { selectClaimableQuery } from "../shared/claimable.js";
import { compiled } from "../shared/query-db.js";
import { ackQuery, lockedRetryQuery } from "../shared/settlement.js";
import { sqliteContext as ctx } from "./query-builder.js";

/** `select … from "t" where <claimable> order by … limit ?` — no lock: keys decide. */
export function selectAdvisoryCandidates(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
  return compiled(selectClaimableQuery(ctx, spec, options, false));
}

/** `update "t" set "attempt" = "attempt" + 1 where "id" = ? and <claimable>`: one row affected, or the row is gone. */
export function takeAdvisory(spec: InboxDescription, id: unknown, now: Date): CompiledQuery {
  return takeQuery(ctx, spec, id, now);
}

/**
 * SQLite has no session locks: keys live in a registry of the process (`tryLock` and
 * `unlock` are `null`), so one database file serves one process.
 */
export const sqliteAdvisory: AdvisoryStatements = Object.freeze({
  selectCandidates: selectAdvisoryCandidates,
  tryLock: () => null,
  unlock: () => null,
  take: takeAdvisory,
  settleAck: (spec: InboxDescription, id: unknown, now: Date) => ackQuery(ctx, spec, id, now),
  settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date | null) => lockedRetryQuery(ctx, spec, id, retryAt),
});
