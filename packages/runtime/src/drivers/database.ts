import type { EngineDialect } from "@sqlinbox/kysely-dialects";
import { isRetryableConflict } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult, Transaction } from "kysely";
import { isSqlInboxError, type ErrorPlace, type SqlInboxError } from "@sqlinbox/core/internal";
import type { Activity } from "../activity.js";
import { controlTableMissing, tableMissing } from "../errors.js";
import type { Logger } from "../logger.js";

/** What a statement is for: logged with failures, and what a test can make fail. */
export type StatementKind = "claim" | "extend" | "settle" | "publish" | "schema" | "observe" | "clock" | "control" | "prune";

/** A test's stand-in for an unreachable database: returns the error a statement of `kind` fails with. */
export type StatementFault = (kind: StatementKind) => Error | undefined;

import type { AnyKysely, ControlPlace } from "@sqlinbox/database";

export type { AnyKysely };
// biome-ignore lint/suspicious/noExplicitAny: the runtime runs compiled queries on any database interface
export type AnyTransaction = Transaction<any>;

/** A session that runs sqlinbox's statements as they are, with no plugin of the app's (a held connection, a claim's transaction). */
export interface OwnStatementSession {
  executeQuery<R>(query: CompiledQuery<R>): Promise<QueryResult<R>>;
}

const MAX_DEADLOCK_RETRIES = 20;

/**
 * A deadlock or serialization failure (InnoDB 1213, a Galera certification failure, SQLSTATE 40P01
 * or 40001): the server rolled the transaction back and it can run again. The classification is the
 * dialects' (`isRetryableConflict`).
 */
export function isDeadlock(error: unknown): boolean {
  return isRetryableConflict(error);
}

/**
 * The `Schema` error of a statement that failed on a missing table, placed where it happened (a
 * delivery's subscription, table and row); `undefined` for any other failure. Reads the driver's
 * error, or the `Schema` error `Database` already made of it.
 */
export function missingTableError(dialect: EngineDialect, error: unknown, place: ErrorPlace): SqlInboxError | undefined {
  const cause = isSqlInboxError(error, "Schema") ? error.cause : error;
  return dialect.missingTable(cause) ? tableMissing(cause, place) : undefined;
}

/** MySQL/MariaDB duplicate key (1062): an insert found its unique key already held. */
export function isDuplicateKey(error: unknown): boolean {
  const e = error as { errno?: unknown; code?: unknown } | null;
  return e !== null && typeof e === "object" && (e.errno === 1062 || e.code === "ER_DUP_ENTRY");
}

/**
 * Where sqlinbox's own statements run: `via` without the application's plugins. A statement is compiled
 * already (no plugin rewrites it), but `executeQuery` would still run every plugin's `transformResult`
 * on its rows (`CamelCasePlugin` renames `locked_until`, `ParseJSONResultsPlugin` parses a text payload),
 * and the runtime reads raw column names. Same connection and transaction; no copy when there are no plugins.
 */
export function ownStatementsOn<K extends AnyKysely | AnyTransaction>(via: K): K {
  return via.getExecutor().plugins.length === 0 ? via : (via.withoutPlugins() as K);
}

/**
 * Runs the dialect's compiled statements: tracks them for `TestApp.settle`, applies a test's
 * fault, and retries deadlocks and serialization failures transparently, counting them in the log.
 */
export class Database {
  /** The application's Kysely without its plugins: where sqlinbox's own statements and transactions run. */
  readonly db: AnyKysely;
  /**
   * The application's Kysely as it was given, plugins and all: what a transactional handler's `ctx.tx`
   * (and the connection or transaction it is opened on) starts from. Statements of sqlinbox's own that
   * run on it go through `ownStatementsOn`.
   */
  readonly appDb: AnyKysely;
  readonly dialect: EngineDialect;
  readonly activity: Activity;
  readonly #logger: Logger;
  fault: StatementFault | undefined;
  /**
   * The driver reads a time column back as a `Date` (`pg`; `mysql2` without `dateStrings`), not
   * as text (`better-sqlite3`; `mysql2` with it). MySQL/MariaDB: set from the server check's probe.
   */
  readsTimeAsDate: boolean;
  #deadlocks = 0;
  #pending = 0;
  #idle: Array<() => void> = [];

  constructor(db: AnyKysely, dialect: EngineDialect, logger: Logger, activity: Activity) {
    this.appDb = db;
    this.db = ownStatementsOn(db);
    this.dialect = dialect;
    this.#logger = logger;
    this.activity = activity;
    this.readsTimeAsDate = dialect.capabilities.readsTimeAsDate;
  }

  /** A time as the driver would read it back from a column: what a claim writes into a row it hands over. */
  timeAsRead(date: Date, precision: number): unknown {
    return this.readsTimeAsDate ? this.dialect.time.truncate(date, precision) : this.dialect.time.encode(date, precision);
  }

  /** Where pause, resume and cancel run (the control procedures of `@sqlinbox/database`): here; a missing control table is a `Schema` error. */
  get controlPlace(): ControlPlace {
    return { db: this.db, dialect: this.dialect, controlTableMissing };
  }

  /** Deadlocks retried so far. */
  get deadlocks(): number {
    return this.#deadlocks;
  }

  /** Statements running now (telemetry's connections-held gauge). */
  get running(): number {
    return this.#pending;
  }

  /**
   * One statement on its own (autocommit), or on `via` (a connection or transaction), without the application's plugins.
   * A deadlock or serialization failure is retried here only outside a transaction: inside one, the server rolled the
   * whole transaction back, so the statement alone would run again in autocommit, on rows the rolled-back statements
   * read (a claim's stamp on rows another node or session took meanwhile). The transaction's owner runs it again whole.
   */
  execute<R>(kind: StatementKind, query: CompiledQuery<R>, via?: AnyKysely | AnyTransaction | OwnStatementSession): Promise<QueryResult<R>> {
    const inTransaction = via !== undefined && "isTransaction" in via && via.isTransaction === true;
    return this.#run(kind, () => (via === undefined ? this.db : "getExecutor" in via ? ownStatementsOn(via) : via).executeQuery(query), !inTransaction);
  }

  /**
   * `execute` of a statement built anew for each try: one whose parameters read the clock (a lease claim's
   * `now` and deadline) is never run again, after a deadlock, with the times of a try that failed earlier.
   */
  executeBuilt<R>(kind: StatementKind, build: () => CompiledQuery<R>): Promise<QueryResult<R>> {
    return this.#run(kind, () => this.db.executeQuery(build()));
  }

  /** A short transaction; MySQL/MariaDB claims open it READ COMMITTED. */
  transaction<T>(kind: StatementKind, work: (trx: AnyTransaction) => Promise<T>): Promise<T> {
    const isolation = this.dialect.capabilities.claimIsolation;
    return this.#run(kind, () => {
      const builder = this.db.transaction();
      return (isolation ? builder.setIsolationLevel(isolation) : builder).execute(work);
    });
  }

  /**
   * Counts and logs a deadlock that a caller retries itself (a whole row-lock transaction,
   * which cannot be retried statement by statement). Returns false once retries are spent.
   */
  retryDeadlock(kind: StatementKind, retry: number): boolean {
    if (retry > MAX_DEADLOCK_RETRIES) return false;
    this.#deadlocks++;
    this.#logger.warn({ statement: kind, retry, deadlocksRetried: this.#deadlocks }, "deadlock retried");
    return true;
  }

  /** Resolves once no statement of this database is running (before the pool closes). */
  idle(): Promise<void> {
    return this.#pending === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }

  #run<T>(kind: StatementKind, work: () => Promise<T>, retries = true): Promise<T> {
    this.#pending++;
    return this.#runTracked(kind, work, retries).finally(() => {
      if (--this.#pending === 0) for (const resolve of this.#idle.splice(0)) resolve();
    });
  }

  #runTracked<T>(kind: StatementKind, work: () => Promise<T>, retries: boolean): Promise<T> {
    return this.activity.track(async () => {
      for (let attempt = 0; ; attempt++) {
        const injected = this.fault?.(kind);
        if (injected) throw injected;
        try {
          return await work();
        } catch (error) {
          // A missing table is a Schema error, whatever the statement was for.
          if (this.dialect.missingTable(error)) throw tableMissing(error, {});
          if (!retries || !isDeadlock(error) || attempt >= MAX_DEADLOCK_RETRIES) throw error;
          this.#deadlocks++;
          this.#logger.warn({ statement: kind, retry: attempt + 1, deadlocksRetried: this.#deadlocks }, "deadlock retried");
        }
      }
    });
  }
}
