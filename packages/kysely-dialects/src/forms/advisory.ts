import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { AdvisoryStatements, ClaimOptions, RawRow } from "../types.js";
import { takeQuery, takenRowQuery } from "../statements/advisory-take.js";
import { selectClaimableQuery } from "../statements/claimable.js";
import { compiled } from "../statements/query-db.js";
import { ackQuery, lockedRetryQuery } from "../statements/settle.js";
import { claimOptionsOf, claimShapeKey, claimValues, StatementShapes } from "../statements/shapes.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * The advisory form, on every engine: candidates are read without a lock (keys decide), each
 * key is locked without waiting on the delivery's own session, then the row is taken. Where
 * keys live in the process (SQLite) `tryLock` and `unlock` are `null`.
 */
export function advisoryStatements(engine: EngineTraits): AdvisoryStatements {
  const ctx = engine.statements;
  const locks = engine.sessionLocks;
  // Compiled once per shape: every delivery runs a take and a settlement.
  const shapes = new StatementShapes(ctx);
  return Object.freeze({
    selectCandidates: (spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> =>
      shapes.fill(spec, claimShapeKey("candidates", options), claimValues(options), (c, v) =>
        compiled(selectClaimableQuery(c, spec, claimOptionsOf(v, options), { lock: "none" })),
      ),
    tryLock: locks === null ? () => null : (key: string, database: string) => locks.tryLock(key, database),
    unlock: locks === null ? () => null : (key: string, database: string) => locks.unlock(key, database),
    take: (spec: InboxDescription, id: unknown, now: Date) => shapes.fill(spec, "take", { id, now }, (c, v) => takeQuery(c, spec, v.id, v.now)),
    readTaken: ctx.capabilities.updateReturning
      ? () => null
      : (spec: InboxDescription, id: unknown) => shapes.fill(spec, "taken", { id }, (c, v) => takenRowQuery(c, spec, v.id) as CompiledQuery<RawRow>),
    settleAck: (spec: InboxDescription, id: unknown, now: Date) => shapes.fill(spec, "ack", { id, now }, (c, v) => ackQuery(c, spec, v.id, v.now)),
    settleRetry: (spec: InboxDescription, id: unknown, retryAt: Date | null) =>
      retryAt === null ? null : shapes.fill(spec, "retry", { id, retryAt }, (c, v) => lockedRetryQuery(c, spec, v.id, v.retryAt) as CompiledQuery),
  });
}
