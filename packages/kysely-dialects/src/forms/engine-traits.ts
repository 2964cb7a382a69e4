import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { ClaimOptions, EngineCapabilities, NotifyStatements, RawRow, SchemaStatements, TimeCodec } from "../types.js";
import type { OperatorTraits } from "../operator/types.js";
import type { VersionFloor } from "../shared/server-version.js";
import type { LeaseStamp } from "../statements/claim-stamp.js";
import type { Eb, StatementContext } from "../statements/query-db.js";
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
 * How an engine holds an order key for as long as a row-lock transaction holds a row of it
 * (`statements/order-key-lock.ts`); `null` where there is no row-lock form.
 */
export interface OrderKeyLockTraits {
  /** Takes `slot` of the key `key` (an expression over the row) without waiting: true when taken. */
  tryLock(eb: Eb, spec: InboxDescription, key: Expression<unknown>, slot: number): Expression<SqlBool>;
  /** Gives back every key lock the session holds, run before the transaction ends; `null` where its end does (transaction locks). */
  readonly release: CompiledQuery | null;
}

/** How an engine's real table is read against a description (`shared/schema-check.ts` applies them). */
export interface SchemaRules {
  /** Column names compare exactly (Postgres, where quoted names keep their case) or without case. */
  readonly caseSensitiveNames: boolean;
  /** The column type (lower case) holds a time the way the engine's codec writes it. */
  holdsTime(dataType: string): boolean;
  /** What to use instead, in the error message. */
  readonly timeTypeAdvice: string;
  /** Fractional second digits the lease column keeps, from what the schema reported. */
  leasePrecision(reported: number | null): number;
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
  /** Order keys held while a row-lock transaction holds a row of them; `null` without the row-lock form. */
  readonly orderKeyLocks: OrderKeyLockTraits | null;
  readonly schema: SchemaStatements;
  /** How the real table is read against a description: name case, time column types, lease precision. */
  readonly schemaRules: SchemaRules;
  readonly notify: NotifyStatements | null;
  /**
   * The lowest version sqlinbox runs on, for the version string the server reports (one engine
   * may cover several products); throws `UnsupportedForm` for a server it refuses by name.
   */
  versionFloor(version: string): VersionFloor;
  /** The OpenTelemetry `db.system.name` of a server this engine's version check labelled. */
  dbSystemName(serverLabel: string): string;
  /** What the operator tools' statements do differently here (`@sqlinbox/kysely-dialects/operator`). */
  readonly operator: OperatorTraits;
  /** True when the driver's error says a table does not exist: each driver says it its own way. */
  missingTable(error: unknown): boolean;
  /** What each column of a queue table is here (`createInboxTable`, `inboxTableSql`). */
  readonly tableTypes: TableTypes;
}
