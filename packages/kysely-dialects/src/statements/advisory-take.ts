import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import { whereClaimable } from "./claimable.js";
import { compiled, type Eb, type StatementContext } from "./query-db.js";
import { tableRef } from "./table-ref.js";

/**
 * Takes a row whose key this session has just locked: counts its attempt, only while the row is
 * still claimable. The claimable check is repeated because another session may have finished the row between the candidate select
 * and the lock: one row affected means it is ours, zero that it is gone.
 * Without an attempt column it writes `id = id`, so the affected count still answers.
 */
export function takeQuery(ctx: StatementContext, spec: InboxDescription, id: unknown, now: Date): CompiledQuery {
  const attempt = spec.attempt?.name;
  const update = ctx.db
    .updateTable(tableRef(spec))
    .set((eb: Eb) => (attempt !== undefined ? { [attempt]: eb(attempt, "+", eb.lit(1)) } : { [spec.id.name]: eb.ref(spec.id.name) }))
    .where(spec.id.name, "=", id);
  return compiled(whereClaimable(ctx, spec, { now }, update));
}
