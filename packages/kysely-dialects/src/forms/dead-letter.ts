import type { InboxDescription } from "@sqlinbox/core/internal";
import type { DeadLetterRecord, DeadLetterStatements, HeldLease } from "../types.js";
import { moveToGroupQuery, moveToTableQuery, removeMovedQuery, type HeldToken } from "../statements/dead-letter.js";
import type { EngineTraits } from "./engine-traits.js";

const tokenOf = (held: HeldLease | undefined, precision: number | undefined): HeldToken | undefined =>
  held === undefined ? undefined : { lease: held, precision: precision ?? 0 };

/**
 * Dead-letter moves, the same text on every engine and form: the form decides what fences them
 * (the row-lock transaction, the advisory session, or, in the lease form, the held token the
 * statements match when `held` is given).
 */
export function deadLetterStatements(engine: EngineTraits): DeadLetterStatements {
  const ctx = engine.statements;
  return Object.freeze({
    toTable: (source: InboxDescription, dest: InboxDescription, id: unknown, record: DeadLetterRecord, held?: HeldLease, precision?: number) =>
      moveToTableQuery(ctx, source, dest, id, record, tokenOf(held, precision)),
    removeMoved: (source: InboxDescription, id: unknown, held?: HeldLease, precision?: number) => removeMovedQuery(ctx, source, id, tokenOf(held, precision)),
    toGroup: (source: InboxDescription, id: unknown, group: string, record: DeadLetterRecord, held?: HeldLease, precision?: number) =>
      moveToGroupQuery(ctx, source, id, group, record, tokenOf(held, precision)),
  });
}
