import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import type { LeaseStamp } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { claimPicked } from "./claim-picked.js";
import { fifoClaimWithCte } from "./fifo-claim-cte.js";
import { fifoRuleApplies } from "../statements/order-key-head.js";
import { col, type StatementContext } from "../statements/query-db.js";

/**
 * The one-statement claim of Postgres: a CTE picks the claimable ids `FOR UPDATE SKIP LOCKED`,
 * a second CTE updates those rows (deadline when `lease` is given, attempt + 1) returning the
 * described columns, and the outer select returns them in claim order.
 *
 * `SKIP LOCKED` sits in the CTE so that concurrent claimers pick disjoint rows instead of
 * queueing behind each other; a row committed by another claimer meanwhile is re-checked by
 * Postgres against the WHERE and dropped. The outer select restores the claim order, which
 * `RETURNING` does not keep. A fifo table claims its group's head instead (`fifoClaimWithCte`).
 *
 * @example
 * claimWithCte(ctx, reports, { limit: 5, now }, { until, precision: 3 }) // the report_jobs table, see below
 * ```sql postgres:lease.claim(reports)
 * with "picked" as (select "report_jobs"."id" from "report_jobs"
 *   where ("report_jobs"."locked_until" is null or "report_jobs"."locked_until" <= $1)
 *   order by "report_jobs"."id" asc limit $2 for update skip locked),
 * "claimed" as (update "report_jobs" set "locked_until" = $3, "attempt" = "attempt" + 1
 *   where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "payload")
 * select * from "claimed" order by "id" asc
 * ```
 */
export function claimWithCte(ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, lease: LeaseStamp | null): CompiledQuery<RawRow> {
  if (fifoRuleApplies(spec, options)) return fifoClaimWithCte(ctx, spec, options, lease);
  const id = spec.id.name;
  const picked = selectClaimableQuery(ctx, spec, options, { lock: "skip locked", columns: [col(spec, id)] });
  return claimPicked(
    ctx,
    spec,
    lease,
    ctx.db.with("picked", () => picked),
  );
}
