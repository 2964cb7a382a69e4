import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, RawRow, RowLockStatements } from "../types.js";
import { stampPickedQuery, uncountPickedQuery } from "../statements/claim-stamp.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { lockFifoGroupQuery } from "../statements/fifo-head.js";
import { fifoRuleApplies, orderedKey } from "../statements/order-key-head.js";
import { compiled } from "../statements/query-db.js";
import { lockOrderKeysQuery } from "../statements/order-key-lock.js";
import { ackQuery, lockedAckManyQuery, lockedRetryQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes, Whole } from "../statements/shapes.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * The row-lock form: the claim transaction holds the rows while handlers run. `null` on an engine
 * without `FOR UPDATE SKIP LOCKED` (SQLite), where a row-lock table is `UnsupportedForm`.
 *
 * The claim counts the attempt in the same transaction, so a rollback (a crash) un-counts it:
 * in the claim itself where the engine claims in one statement (the rows carry the attempt after
 * counting), otherwise by `countAttempts` after a locking select (the rows carry it before).
 */
export function rowLockStatements(engine: EngineTraits): RowLockStatements | null {
  if (!engine.capabilities.rowLock) return null;
  const ctx = engine.statements;
  const oneStatement = engine.oneStatementClaim;
  // Compiled once per shape: a delivery runs a claim and a settlement.
  const shapes = new StatementShapes(ctx);
  return Object.freeze({
    lockFifoGroup: (spec: InboxDescription, options: ClaimOptions) => lockFifoGroupQuery(ctx, spec, options, oneStatement !== null),
    claim(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> {
      // Without an attempt column there is nothing to write: the locking select is the claim
      // (a fifo claim keeps its one statement, which locks the group: see fifo-head.ts).
      if (oneStatement !== null && (spec.attempt !== undefined || fifoRuleApplies(spec, options)))
        return shapes.fill(spec, claimShapeKey("claim", options), claimValues(options), (c, v) => oneStatement(c, spec, claimOptionsOf(v, options), null));
      return shapes.fill(spec, claimShapeKey("select", options), claimValues(options), (c, v) =>
        compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock: "skip locked" })),
      );
    },
    countAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery | null {
      if (oneStatement !== null || spec.attempt === undefined) return null;
      return shapes.fill(spec, `count|${ids.length}`, { ids }, (c, v) => stampPickedQuery(c, spec, v.ids, null));
    },
    lockOrderKeys(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">, ids: readonly unknown[], slots: readonly number[]) {
      const locks = engine.orderKeyLocks;
      if (locks === null || orderedKey(spec, options) === undefined) return null;
      return shapes.fill(spec, `lockKeys|${ids.length}|${slots.join(",")}`, { ids }, (c, v) => lockOrderKeysQuery(c, locks, spec, options, v.ids, slots) as CompiledQuery<RawRow>);
    },
    releaseOrderKeys: engine.orderKeyLocks?.release ?? null,
    uncountAttempts: (spec: InboxDescription, ids: readonly unknown[]) => (ids.length === 0 ? null : uncountPickedQuery(ctx, spec, ids)),
    settleAck: (spec: InboxDescription, id: unknown, now: Date) => shapes.fill(spec, "ack", { id, now }, (c, v) => ackQuery(c, spec, v.id, v.now)),
    settleAckMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery | null {
      if (!engine.capabilities.heldRowsAckTogether) return null;
      if (ids.length === 0) throw new Error("settleAckMany: no ids to ack");
      const whole = engine.capabilities.arrayParameters;
      return shapes.fill(spec, whole ? "ackMany" : `ackMany|${ids.length}`, { ids: whole ? new Whole(ids) : ids, now }, (c, v) => lockedAckManyQuery(c, spec, v.ids, v.now));
    },
    settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date | null) =>
      retryAt === null ? null : shapes.fill(spec, "retry", { id, retryAt }, (c, v) => lockedRetryQuery(c, spec, v.id, v.retryAt) as CompiledQuery),
  });
}
