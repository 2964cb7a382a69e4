import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import { claimOrder, col, selectClaimableQuery } from "../shared/claimable.js";
import { stampValues } from "../shared/lease-writes.js";
import { compiled, type Eb } from "../shared/query-db.js";
import { postgresContext as ctx } from "./query-builder.js";

/**
 * The one-statement claim of Postgres:
 *
 * ```sql
 * with "picked" as (select "t"."id" from "t" where <claimable> order by … limit $n for update skip locked),
 *      "claimed" as (update "t" set ["locked_until" = $until,] "attempt" = "attempt" + 1
 *                    where "id" in (select "id" from "picked") returning <described columns>)
 * select * from "claimed" order by …
 * ```
 *
 * `SKIP LOCKED` sits in the CTE so that concurrent claimers pick disjoint rows instead of
 * queueing behind each other; a row committed by another claimer meanwhile is re-checked by
 * Postgres against the WHERE and dropped. The outer select restores the claim order,
 * which `RETURNING` does not keep.
 */
export function claimWithCte(spec: InboxDescription, options: ClaimOptions, until: Date | null, precision: number): CompiledQuery<RawRow> {
  const id = spec.id.name;
  const picked = selectClaimableQuery(ctx, spec, options, true, [col(spec, id)]);
  const query = ctx.db
    .with("picked", () => picked)
    .with("claimed", (db) =>
      db
        .updateTable(spec.table)
        .set(stampValues(ctx, spec, until, precision))
        .where(id, "in", (eb: Eb) => eb.selectFrom("picked").select(id))
        .returning(spec.columns.map((c) => c.name)),
    )
    .selectFrom("claimed")
    .selectAll();
  return compiled(claimOrder(ctx, spec, query, false));
}
