/** The engines sqlinbox speaks. `mysql` covers MySQL 8.0.1+ and MariaDB 10.6+. */
export type Engine = "postgres" | "mysql" | "sqlite";

/** What an engine can do, stated once, so callers never branch on the engine's name. */
export interface EngineCapabilities {
  readonly engine: Engine;
  /** `UPDATE … RETURNING` exists on every supported version (not on MySQL). */
  readonly updateReturning: boolean;
  /** `INSERT … RETURNING` exists (MariaDB has it, MySQL does not: the mysql dialect uses insertId). */
  readonly insertReturning: boolean;
  /**
   * `FOR UPDATE SKIP LOCKED`: the row-lock form is possible, and the lease form's selects lock
   * the rows they read (without it, one writer at a time is the lock: SQLite).
   */
  readonly rowLock: boolean;
  /**
   * The type a cast names to read a JSON column as its text (`CAST(x AS text)`; MySQL/MariaDB say
   * `char`), so a JSON string reads back as JSON text on every engine, not as a value the driver decoded.
   */
  readonly jsonTextCast: "text" | "char";
  /** Ascending order puts NULL first without being told (MySQL, SQLite); otherwise claims say `NULLS FIRST` (Postgres). */
  readonly nullsFirstByDefault: boolean;
  /** Where advisory locks live: in the server session, or in this process (SQLite). */
  readonly advisoryLocks: "session" | "process";
  /**
   * How a key names its session lock: a 64-bit hash of the key (Postgres), the key prefixed with
   * the database name (MySQL/MariaDB `GET_LOCK`, whose locks are server-wide), or none (process registry).
   */
  readonly advisoryLockName: "key-hash" | "database-and-key" | null;
  /** The server relays notifications between sessions (Postgres LISTEN/NOTIFY): the `notify` statements exist. */
  readonly listenNotify: boolean;
  /**
   * Processes share the database as a file they all write (SQLite): a commit by another process shows
   * in the file, so a watch of it can wake subscriptions without a polling statement. The `fileWake`
   * statements exist.
   */
  readonly fileWakes: boolean;
  /**
   * A list of ids can be one array parameter (`"id" = any($1)`), so a statement keeps one text
   * whatever the list's length (Postgres); elsewhere a list is `IN (?, ?, …)`, one text per length.
   */
  readonly arrayParameters: boolean;
  /**
   * One statement may ack many rows a row-lock transaction holds (`rowLock.settleAckMany`): it touches
   * only those rows, never waiting on rows other transactions hold (on MySQL/MariaDB because it reads them
   * by the primary key: see `lockedAckManyQuery`). False on SQLite, which has no row-lock form.
   */
  readonly heldRowsAckTogether: boolean;
  /** Bound parameters one statement may carry: a bulk publish splits its rows into inserts that fit. */
  readonly maxParameters: number;
  /** A table can live in a named schema (Postgres) or another database (MySQL/MariaDB); not on SQLite. */
  readonly tableSchemas: boolean;
  /**
   * The engine's driver reads a time column back as a `Date` (`pg` on `TIMESTAMPTZ`), not as text
   * (`better-sqlite3`; `mysql2` with `dateStrings`). A runtime corrects it where the pool decides
   * (MySQL/MariaDB: the server check's `time_probe`).
   */
  readonly readsTimeAsDate: boolean;
  /**
   * One writer at a time, through the one connection a process holds (SQLite): a transaction holds
   * it, so nothing else (a lease extension, a publish) runs until it ends, and no pool budget applies.
   */
  readonly singleWriter: boolean;
  /** The isolation level a row-lock or lease-claim transaction opens with, if not the default. */
  readonly claimIsolation?: "read committed";
}

/** The capabilities that are a yes or a no (what `EngineSupports` reads at the type level). */
export type BooleanCapability = { [K in keyof EngineCapabilities]-?: EngineCapabilities[K] extends boolean ? K : never }[keyof EngineCapabilities];

/** A row as the database returns it: column names to raw values. */
export type RawRow = Record<string, unknown>;

/** A lease in work: the row's id and the deadline written into it, which is the token of ownership. */
export interface HeldLease {
  readonly id: unknown;
  readonly held: Date;
}

/** How the lease column stores time, learned from the schema check. */
export interface LeaseColumnInfo {
  /** Fractional second digits the column keeps: 6 for TIMESTAMPTZ, n for DATETIME(n), 3 for SQLite text. */
  readonly precision: number;
}

/**
 * What the startup check reads of the real table beside its columns: the columns the database fills
 * on an insert (`SchemaStatements.filledColumns`) and those a unique index covers alone (`uniqueColumns`).
 */
export interface TableKeys {
  readonly filled: readonly string[];
  readonly unique: readonly string[];
}

/** A column as the schema check found it in the real table. */
export interface FoundColumn {
  readonly name: string;
  readonly dataType: string;
  /** Fractional second digits of a time column, when the engine reports them. */
  readonly precision: number | null;
  readonly nullable: boolean;
}

/** Time as each engine stores it: a lease deadline written and compared as a parameter. */
export interface TimeCodec {
  /** `date` rounded down to what the column keeps, so the value read back equals the token. */
  truncate(date: Date, precision: number): Date;
  /** The parameter written for a time (a Date for Postgres, text for MySQL and SQLite). */
  encode(date: Date, precision: number): unknown;
  /** A time as read back from the column. */
  decode(raw: unknown): Date | null;
}

/** Options shared by claim statements. */
export interface ClaimOptions {
  /** How many rows to claim at most. */
  readonly limit: number;
  /** The time claims compare against, passed as a parameter: the database's time as the runtime reads it (the host clock plus its measured offset, `serverTime`). */
  readonly now: Date;
  /** Subscription's group value, when the table has a group column. */
  readonly group?: string;
  /** Ids this process keeps out of its claims for now (rows parked for a delay with no column to store it). */
  readonly exclude?: readonly unknown[];
  /**
   * Fifo on MySQL/MariaDB: how many rows `lockFifoGroup` locked in this claim's transaction. The
   * claim takes the group's head only when the group has no row but those (none in work elsewhere).
   */
  readonly fifoLocked?: number;
  /**
   * On a table with an order key: how many rows of one key may be in work at once
   * (`InboxQueue.maxInWorkPerKey`); unset is 1, one at a time. A row is claimable while it is among
   * its key's first `perKey` unprocessed rows in id order.
   */
  readonly perKey?: number;
}

/** Lease-form claim options: the deadline to write. */
export interface LeaseClaimOptions extends ClaimOptions {
  readonly until: Date;
  readonly precision: number;
}
