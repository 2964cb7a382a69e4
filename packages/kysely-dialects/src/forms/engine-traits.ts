import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { ClaimOptions, EngineCapabilities, RawRow, TimeCodec } from "../types.js";
import type { OperatorTraits } from "../operator/types.js";
import type { VersionFloor } from "../shared/server-version.js";
import type { LeaseStamp } from "../statements/claim-stamp.js";
import type { Eb, StatementContext } from "../statements/query-db.js";
import type { TableTypes } from "../statements/create-table.js";
import type { BatchDelete } from "../statements/retention.js";

/**
 * A claim in one statement: picks the claimable rows, counts the attempt, writes the deadline
 * when `lease` is given (lease form; `null` in the row-lock form, which writes none), and returns
 * the rows with their described columns after the change.
 */
export type OneStatementClaim = (ctx: StatementContext, spec: InboxDescription, options: ClaimOptions, lease: LeaseStamp | null) => CompiledQuery<RawRow>;

/** An engine's session locks on advisory keys (where keys live in the process, the engine has none: `"process registry"`). */
export interface SessionLockStatements {
  tryLock(key: string, database: string): CompiledQuery<{ locked: unknown }>;
  unlock(key: string, database: string): CompiledQuery;
  /** Tries every key's lock without waiting, in one statement: one row whose column `"i"` answers for `keys[i]` (taken: true or 1). */
  tryLockMany(keys: readonly string[], database: string): CompiledQuery<RawRow>;
  /** Releases every key's lock in one statement: one row whose column `"i"` answers for `keys[i]` (it was held: true or 1). */
  unlockMany(keys: readonly string[], database: string): CompiledQuery<RawRow>;
}

/**
 * How an engine holds an order key for as long as a row-lock transaction holds a row of it
 * (`statements/order-key-lock.ts`); an engine without the row-lock form has none (`"no row-lock form"`).
 */
export interface OrderKeyLockTraits {
  /** Takes `slot` of the key `key` (an expression over the row) without waiting: true when taken. */
  tryLock(eb: Eb, spec: InboxDescription, key: Expression<unknown>, slot: number): Expression<SqlBool>;
  /**
   * Gives back every key lock the session holds, run before the transaction ends where the locks
   * outlive it (session locks); `"with the transaction"` where its end gives them back (transaction locks).
   */
  readonly release: CompiledQuery | "with the transaction";
}

/**
 * How a row-lock transaction waits a bounded time for a row lock (a claim queued for a cap's slot):
 * where the engine has row locks; an engine without them has none (`"no row-lock form"`).
 */
export interface LockWaitTraits {
  /** Bounds the lock waits of the transaction's next statements to `ms` (rounded up to what the engine counts). */
  bound(ms: number): CompiledQuery;
  /** Sets the bound back to the session's own, before the transaction's other statements (a handler's writes) run. */
  unbound(): CompiledQuery;
  /** A wait past the bound aborts the whole transaction, whose rollback sets the bound back (Postgres); else it fails the statement alone. */
  readonly timeoutAbortsTransaction: boolean;
  /** True when the driver's error is a lock wait that ran past the bound. */
  timedOut(error: unknown): boolean;
}

/** The startup checks. */
export interface SchemaStatements {
  /**
   * The real table's columns: `name`, `data_type`, `precision`, `nullable` (`YES`/`NO` or 1/0); read
   * in `schema` (a Postgres schema, a MySQL/MariaDB database) when given, else the connection's own.
   */
  describeTable(table: string, schema?: string): CompiledQuery<RawRow>;
  /**
   * One row with `name` per column the database fills when an insert leaves it out (a default, an
   * identity or auto-increment, SQLite's rowid alias): what a generated id needs. Read like `describeTable`.
   */
  filledColumns(table: string, schema?: string): CompiledQuery<{ name: string }>;
  /**
   * One row with `name` per column a unique index covers alone (a primary key, a unique constraint or
   * index of that one column, not partial): what a dedup key needs. Read like `describeTable`.
   */
  uniqueColumns(table: string, schema?: string): CompiledQuery<{ name: string }>;
  /**
   * One row with `version`: the server's version string. MySQL/MariaDB add `time_probe`, a
   * `DATETIME` as the driver reads one (text with `dateStrings`, else a `Date`), so a value the
   * runtime writes into a row it hands over (a claim's deadline) takes the same form.
   */
  serverVersion(): CompiledQuery<{ version: string; time_probe?: unknown }>;
  /**
   * One row with `now_ms`: the server's clock now, in milliseconds since the Unix epoch (UTC), whatever
   * the session's time zone (a number, or decimal text on MySQL/MariaDB: read it with `Number`). The
   * runtime measures the host clock's offset from it, so that lease deadlines are in the database's time.
   * SQLite has no server: its clock is the operating system's, which every process sharing the file reads.
   */
  serverTime(): CompiledQuery<{ now_ms: unknown }>;
  /** One row with `name`: the current database (MySQL) or schema (Postgres); SQLite: `main`. */
  currentDatabase(): CompiledQuery<{ name: string }>;
  /**
   * What tells a multi-primary cluster from one server, read at startup: rows of `Variable_name`
   * and `Value` that `clusterOf` reads (MySQL/MariaDB: Galera's `wsrep_on` and `wsrep_cluster_size`).
   * None where the engine has no such cluster (Postgres' replicas are read-only; SQLite).
   */
  cluster(): readonly CompiledQuery<ClusterVariable>[];
}

/**
 * Waking other processes through the server (Postgres LISTEN/NOTIFY). Each statement runs on its
 * own session: listening holds a connection for the app's life. They exist where the server relays
 * notifications (`capabilities.listenNotify`); elsewhere each refuses (`UnsupportedForm`), and
 * other processes see a publish at their next poll.
 */
export interface NotifyStatements {
  /** Starts listening on `channel` (an identifier, quoted by Kysely) on this session. */
  listen(channel: string): CompiledQuery;
  /** Stops listening on every channel of this session, before the connection goes back to the pool. */
  unlistenAll(): CompiledQuery;
  /**
   * Notifies `channel` with `group` as the payload (the group the rows were published to; empty, the
   * default, wakes every subscription of the table); inside a transaction it goes out at commit, and a
   * rollback sends nothing.
   */
  notify(channel: string, group?: string): CompiledQuery;
}

/**
 * Waking subscriptions from the database file (`capabilities.fileWakes`: SQLite), where no server relays
 * notifications: the runtime watches the file another process commits to, and reads the data version to
 * tell another connection's commit from its own. Elsewhere each statement refuses (`UnsupportedForm`).
 */
export interface FileWakeStatements {
  /** One row with `file`: the path of the main database file; empty for an in-memory or temporary database. */
  databaseFile(): CompiledQuery<{ file: string }>;
  /**
   * One row with `data_version`: a number of this connection's that changes when another connection
   * commits to the database, and not on this connection's own commits.
   */
  dataVersion(): CompiledQuery<{ data_version: number }>;
}

/** One row of `SchemaStatements.cluster()`. */
export interface ClusterVariable {
  readonly Variable_name: string;
  readonly Value: string;
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
  /**
   * What makes the database fill the id column of `spec` (of `dataType`, as the schema reported it) on
   * an insert that leaves it out: `run <the statement>` where one can, else what to do instead.
   */
  fillIdAdvice(spec: InboxDescription, dataType: string): string;
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
  /** The claim in one statement, or `"select then stamp"` where the engine has no `UPDATE … RETURNING`: a locking select, then an update. */
  readonly oneStatementClaim: OneStatementClaim | "select then stamp";
  /** How a prune deletes a bounded batch (`statements/retention.ts`). */
  readonly batchDelete: BatchDelete;
  /** Advisory keys locked in the server session, or `"process registry"` where keys live in the process. */
  readonly sessionLocks: SessionLockStatements | "process registry";
  /** Order keys held while a row-lock transaction holds a row of them; `"no row-lock form"` without row locks. */
  readonly orderKeyLocks: OrderKeyLockTraits | "no row-lock form";
  /** A row lock waited for a bounded time (a claim queued for a cap's slot); `"no row-lock form"` without row locks. */
  readonly lockWait: LockWaitTraits | "no row-lock form";
  readonly schema: SchemaStatements;
  /** How the real table is read against a description: name case, time column types, lease precision. */
  readonly schemaRules: SchemaRules;
  /** LISTEN/NOTIFY, or `"no notifications"` where the server relays none (`capabilities.listenNotify`). */
  readonly notify: NotifyStatements | "no notifications";
  /** What a watch of the database file reads, or `"no shared file"` where a server stands between the processes (`capabilities.fileWakes`). */
  readonly fileWake: FileWakeStatements | "no shared file";
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
  /** `EngineDialect.wroteNothing`: this driver's errors read. */
  wroteNothing(error: unknown): boolean;
  /** What each column of a queue table is here (`createInboxTable`, `inboxTableSql`). */
  readonly tableTypes: TableTypes;
  /**
   * How a `jobs.list` page with no equality to narrow it reads the table: `"planner's choice"`, or
   * `"primary key"` where the planner may prefer a claim index's range and sort all of it (`NOT INDEXED`:
   * the rowid walk, in id order, stopped by the page's limit).
   */
  readonly listWalk: "planner's choice" | "primary key";
}
