import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import { stampValues, type LeaseStamp } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { col, compiled, type StatementContext, tableRef } from "../statements/query-db.js";

/**
 * The one-statement claim of SQLite 3.35+: an update of the rows whose ids a subquery picks
 * (claimable, in claim order, at most `limit`), returning the described columns.
 *
 * SQLite runs one writer at a time, so the subquery and the update see the same rows and no
 * lock clause is needed. `RETURNING` does not keep the claim order: sort the rows if it matters.
 *
 * @example
 * ```sql sqlite:lease.claim(reports)
 * update "report_jobs" set "locked_until" = ?, "attempt" = "attempt" + 1
 * where "id" in (select "report_jobs"."id" from "report_jobs"
 *   where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= ?)
 *   order by "report_jobs"."id" asc limit ?)
 * returning "id", "attempt", "locked_until", "payload"
 * ```
 */
export function claimUpdateReturning(ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, lease: LeaseStamp | null): CompiledQuery<RawRow> {
  const picked = selectClaimableQuery(ctx, spec, options, { lock: "none", columns: [col(spec, spec.id.name)] });
  return compiled(
    ctx.db
      .updateTable(tableRef(spec))
      .set(stampValues(ctx, spec, lease))
      .where(spec.id.name, "in", () => picked)
      .returning(spec.columns.map((c) => c.name)),
  );
}
