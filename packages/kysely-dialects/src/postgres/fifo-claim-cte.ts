import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow } from "../types.js";
import type { LeaseStamp } from "../statements/claim-stamp.js";
import { describedColumns } from "../statements/claimable.js";
import { claimPicked } from "./claim-picked.js";
import { fifoHeadId, fifoScope, fifoSeenCount, notHeld } from "../statements/fifo-head.js";
import { col, compiled, type Eb, type StatementContext, tableRef } from "../statements/query-db.js";

/**
 * The fifo claim of Postgres, in one statement (the head rule and why it locks the group:
 * `statements/fifo-head.ts`):
 *
 * - `fifo_group` locks the group's rows that hold or may take its head, `FOR UPDATE SKIP LOCKED`,
 *   reading each locked row as it is now (a lease committed after the statement's snapshot shows);
 * - `picked` is the head of those rows — a row in work first, then claim order — when it is not
 *   held and the locked rows are all the group's rows (a plain count of the same snapshot):
 *   otherwise another session holds one of them and the group is given up;
 * - `claimed` counts the attempt (and writes the lease) and returns the row, as `claimWithCte` does;
 *   with nothing to write (row lock, no attempt column) the row is selected `FOR UPDATE` instead.
 *
 * @example
 * ```sql postgres:lease.claim(fifo)
 * with "fifo_group" as (select "fifo_jobs"."id", "fifo_jobs"."locked_until" from "fifo_jobs"
 *   where "fifo_jobs"."grp" = $1 for update skip locked),
 * "picked" as (select "fifo_group"."id" from "fifo_group"
 *   where ("fifo_group"."id" = (select "fifo_head"."id" from "fifo_group" as "fifo_head"
 *       order by case when "fifo_head"."locked_until" > $2 then 0 else 1 end asc, "fifo_head"."id" asc limit $3)
 *     and ("fifo_group"."locked_until" is null or "fifo_group"."locked_until" <= $4)
 *     and (select count(*) as "locked" from "fifo_group") = (select count(*) as "seen" from "fifo_jobs" as "fifo_seen" where "fifo_seen"."grp" = $5))),
 * "claimed" as (update "fifo_jobs" set "locked_until" = $6, "attempt" = "attempt" + 1
 *   where "id" in (select "id" from "picked") returning "id", "attempt", null::timestamptz as "locked_until", "grp")
 * select * from "claimed" order by "id" asc
 * ```
 */
export function fifoClaimWithCte(ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, lease: LeaseStamp | null): CompiledQuery<RawRow> {
  const id = spec.id.name;
  const orderColumns = [spec.id, spec.priority, spec.retryAfter, spec.lease].flatMap((c) => (c === undefined ? [] : [col(spec, c.name)]));
  const picked = ctx.db
    .with("fifo_group", (db) =>
      db
        .selectFrom(tableRef(spec))
        .select(orderColumns)
        .where(fifoScope(ctx, spec, options))
        .forUpdate()
        .skipLocked(),
    )
    .with("picked", (db) =>
      db
        .selectFrom("fifo_group")
        .select(`fifo_group.${id}`)
        .where((eb: Eb) =>
          eb.and([
            eb(`fifo_group.${id}`, "=", fifoHeadId(ctx, spec, options, "fifo_group", false)(eb)),
            ...notHeld(ctx, spec, options.now, "fifo_group")(eb),
            eb(
              eb.selectFrom("fifo_group").select((c: Eb) => c.fn.countAll().as("locked")),
              "=",
              fifoSeenCount(ctx, spec, options)(eb),
            ),
          ]),
        ),
    );
  if (lease === null && spec.attempt === undefined) {
    const query = picked
      .selectFrom(tableRef(spec))
      .select(describedColumns(spec))
      .where(col(spec, id), "in", (eb: Eb) => eb.selectFrom("picked").select(id));
    return compiled(query.forUpdate());
  }
  return claimPicked(ctx, spec, lease, picked);
}
