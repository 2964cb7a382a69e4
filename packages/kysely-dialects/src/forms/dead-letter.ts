import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { HeldLease } from "../types.js";
import { moveToGroupQuery, moveToTableQuery, removeMovedQuery, type DeadLetterRecord, type HeldToken } from "../statements/dead-letter.js";
import type { EngineTraits } from "./engine-traits.js";

/**
 * Dead-letter moves (every engine and form). A move to a table is `toTable` then `removeMoved` in
 * one transaction; to a group, `toGroup` alone. Row lock runs them in the claim's transaction,
 * advisory on the key's session; the lease form passes the held token (`held`, `precision`),
 * and zero rows affected means the lease was lost: roll back.
 */
export interface DeadLetterStatements {
  /** Copies the row into the destination table: an insert fed by a select of the source row, matching the token when `held` is given. */
  toTable(source: InboxDescription, dest: InboxDescription, id: unknown, record: DeadLetterRecord, held?: HeldLease, precision?: number): CompiledQuery;
  /** Deletes the moved source row (matching the token when `held` is given). */
  removeMoved(source: InboxDescription, id: unknown, held?: HeldLease, precision?: number): CompiledQuery;
  /** Sets the row's group (and clears its lease when `held` is given, matching the token). */
  toGroup(source: InboxDescription, id: unknown, group: string, record: DeadLetterRecord, held?: HeldLease, precision?: number): CompiledQuery;
}

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
      moveToTableQuery(ctx, engine.tableTypes.time, source, dest, id, record, tokenOf(held, precision)),
    removeMoved: (source: InboxDescription, id: unknown, held?: HeldLease, precision?: number) => removeMovedQuery(ctx, source, id, tokenOf(held, precision)),
    toGroup: (source: InboxDescription, id: unknown, group: string, record: DeadLetterRecord, held?: HeldLease, precision?: number) =>
      moveToGroupQuery(ctx, source, id, group, record, tokenOf(held, precision)),
  });
}
