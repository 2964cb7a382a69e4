import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery } from "kysely";
import type { ClaimOptions, EngineCapabilities, NotifyStatements, RawRow, SchemaStatements, TimeCodec } from "../types.js";
import type { LeaseStamp } from "../statements/claim-stamp.js";
import type { StatementContext } from "../statements/query-db.js";
import type { TableTypes } from "../statements/create-table.js";

/**
 * A claim in one statement: picks the claimable rows, counts the attempt, writes the deadline
 * when `lease` is given (lease form; `null` in the row-lock form), and returns the rows with
 * their described columns after the change.
 */
export type OneStatementClaim = (ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, lease: LeaseStamp | null) => CompiledQuery<RawRow>;

/** An engine's session locks on advisory keys (`null` where keys live in the process). */
export interface SessionLockStatements {
  tryLock(key: string, database: string): CompiledQuery<{ locked: unknown }>;
  unlock(key: string, database: string): CompiledQuery;
}

/**
 * One engine as the form builders see it: its capabilities and the few statements that truly
 * differ from one engine to the next. Everything else is shared statement text in `statements/`,
 * chosen by the capabilities. Each engine's `engine.ts` is this list, with the reason for each entry.
 */
export interface EngineTraits {
  readonly capabilities: EngineCapabilities;
  readonly time: TimeCodec;
  /** The compile-only Kysely of the engine, with its time codec and capabilities. */
  readonly statements: StatementContext;
  /** `null` where the engine needs a locking select then an update (no `UPDATE … RETURNING`). */
  readonly oneStatementClaim: OneStatementClaim | null;
  readonly sessionLocks: SessionLockStatements | null;
  readonly schema: SchemaStatements;
  readonly notify: NotifyStatements | null;
  /** What each column of a queue table is here (`createInboxTable`, `inboxTableSql`). */
  readonly tableTypes: TableTypes;
  checkServerVersion(version: string): string;
}
