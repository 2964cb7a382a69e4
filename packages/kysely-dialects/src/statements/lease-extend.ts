import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { HeldLease, RawRow } from "../types.js";
import { idIn, leaseColumnOf, type LeaseStamp } from "./claim-stamp.js";
import { compiled, type Eb, type StatementContext, tableRef } from "./query-db.js";

/**
 * Moves every lease in work to a new deadline in one statement, each row only while it still
 * holds its own token (`id` and `locked_until` matched per row), so a row another claim took is
 * left alone. Returns the extended ids where the engine has `UPDATE … RETURNING`.
 */
export function extendQuery(ctx: StatementContext, spec: InboxDescription, leases: readonly HeldLease[], to: LeaseStamp): CompiledQuery<RawRow> {
  const lease = leaseColumnOf(spec);
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set({ [lease]: ctx.time.encode(to.until, to.precision) })
    .where((eb: Eb) =>
      leases.length === 0 ? eb.lit(false) : eb.or(leases.map((l) => eb.and([eb(spec.id.name, "=", l.id), eb(lease, "=", ctx.time.encode(l.held, to.precision))]))),
    );
  return ctx.capabilities.updateReturning ? compiled(update.returning(spec.id.name)) : compiled(update);
}

/** The id and deadline of each row: which extensions took, where `extend` cannot return them. */
export function readLeasesQuery(ctx: StatementContext, spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow> {
  return compiled(
    ctx.db
      .selectFrom(tableRef(spec))
      .select([spec.id.name, leaseColumnOf(spec)])
      .where(idIn(spec, ids)),
  );
}
