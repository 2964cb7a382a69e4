import type { InboxDescription } from "@sqlinbox/core/internal";
import { sql, type CompiledQuery } from "kysely";
import type { OrderKeyLockTraits } from "../forms/engine-traits.js";
import type { ClaimOptions } from "../types.js";
import { notForTable } from "../shared/no-statement.js";
import { orderedKey } from "./order-key-head.js";
import { col, compiled, type StatementContext, tableRef } from "./query-db.js";

/** The column `lockOrderKeysQuery` returns: the slot taken for the row, NULL when every slot tried is held elsewhere. */
const ORDER_SLOT = "order_slot";

/**
 * The row-lock form's hold on an order key (`order-key-head.ts` says why): for each claimed row,
 * the first of `slots` of its key that no other transaction holds, taken without waiting, or NULL.
 * Run in the claim's transaction after the claim, on rows it holds: a key is locked only for a row
 * the transaction took. The caller passes rows of distinct keys in one statement (a lock is
 * re-entrant in its session, so two rows of one key would take one slot twice) and, for a key whose
 * slots it already holds, only the others. The table has an ordered key for these options (`orderedKey`).
 */
export function lockOrderKeysQuery(
  ctx: StatementContext,
  locks: OrderKeyLockTraits,
  spec: InboxDescription,
  options: Pick<ClaimOptions, "perKey">,
  ids: readonly unknown[],
  slots: readonly number[],
): CompiledQuery<Record<string, unknown>> {
  const key = orderedKey(spec, options) ?? notForTable("rowLock.lockOrderKeys", "it has no ordered key (an order key, or a group with perKey)", { table: spec.table });
  if (ids.length === 0 || slots.length === 0) throw new Error("lockOrderKeys: no rows, or no slot to try");
  const id = col(spec, spec.id.name);
  return compiled(
    ctx.db
      .selectFrom(tableRef(spec))
      .select((eb) => {
        // In order: slot 0 first, then the next only where it is held (CASE evaluates its branches in turn).
        const [first, ...rest] = slots as [number, ...number[]];
        const keyRef = eb.ref(col(spec, key.name));
        let choice = eb
          .case()
          .when(locks.tryLock(eb, spec, keyRef, first))
          .then(sql.lit(first));
        for (const slot of rest) choice = choice.when(locks.tryLock(eb, spec, keyRef, slot)).then(sql.lit(slot));
        return [eb.ref(id).as(spec.id.name), choice.end().as(ORDER_SLOT)];
      })
      .where(id, "in", ids),
  );
}
