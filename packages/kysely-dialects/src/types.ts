import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, CreateTableBuilder } from "kysely";

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
  /** Ascending order puts NULL first without being told (MySQL, SQLite); otherwise claims say `NULLS FIRST` (Postgres). */
  readonly nullsFirstByDefault: boolean;
  /** Where advisory locks live: in the server session, or in this process (SQLite). */
  readonly advisoryLocks: "session" | "process";
  /**
   * How a key names its session lock: a 64-bit hash of the key (Postgres), the key prefixed with
   * the database name (MySQL/MariaDB `GET_LOCK`, whose locks are server-wide), or none (process registry).
   */
  readonly advisoryLockName: "key-hash" | "database-and-key" | null;
  /** The server relays notifications between sessions (Postgres LISTEN/NOTIFY): `notify` is not `null`. */
  readonly listenNotify: boolean;
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

/**
 * The row-lock form (Postgres, MySQL/MariaDB). Run inside one transaction per delivery:
 * the runtime opens it (`claimIsolation`), runs `claim` (and `countAttempts` where the
 * claim could not count them itself), hands the row to the handler, runs a settlement and commits.
 */
/**
 * Opening and ending a transaction on a connection the caller holds: the statements Kysely's
 * `startTransaction()` sends. `begin` sets `capabilities.claimIsolation` first where there is one
 * (MySQL/MariaDB: `set transaction isolation level read committed`, for the next transaction only).
 */
export interface TransactionStatements {
  readonly begin: readonly CompiledQuery[];
  readonly commit: CompiledQuery;
  readonly rollback: CompiledQuery;
}

export interface RowLockStatements {
  /**
   * Select claimable rows `FOR UPDATE SKIP LOCKED`; on engines with `updateReturning` it also counts the attempt and returns the new value.
   * A fifo table: the group's head only — Postgres locks the group in this statement; MySQL/MariaDB
   * read the head without a lock after `lockFifoGroup`, whose row count goes in `fifoLocked`.
   */
  /**
   * Fifo where the claim cannot lock its group itself (MySQL/MariaDB): `SELECT id … FOR UPDATE SKIP
   * LOCKED` of the group's rows that hold or may take its head, run first in the claim's transaction;
   * its row count goes to the claim as `fifoLocked`. `null` for other tables and engines.
   */
  lockFifoGroup(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> | null;
  claim(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /** Counts an attempt for claimed rows, in the claim's transaction; `null` when `claim` already did. */
  countAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery | null;
  /**
   * Takes the counted attempt back for claimed rows never handed to a handler, in the claim's
   * transaction, which then commits with the other rows' settlements (a shared claim stopped with
   * rows still buffered). `null` without an attempt column, or without ids.
   */
  uncountAttempts(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery | null;
  /**
   * Ordered keys (an order key, or a group with `perKey`): takes, for each claimed row, the first of
   * `slots` of its key free of other transactions, without waiting; the rows come back with the slot
   * taken in `order_slot`, NULL when all were held (the row must not run: another row of its key
   * is in work). Rows of one statement have distinct keys. `null` when the table has no ordered key.
   */
  lockOrderKeys(spec: InboxDescription, options: Pick<ClaimOptions, "perKey">, ids: readonly unknown[], slots: readonly number[]): CompiledQuery<Record<string, unknown>> | null;
  /**
   * Gives back the order-key locks of the transaction's session, run just before it ends (commit or
   * rollback) where they outlive it (MySQL/MariaDB user locks); `null` where its end gives them back (Postgres).
   */
  readonly releaseOrderKeys: CompiledQuery | null;
  /** Ack: delete the row, or mark `processedAt`. */
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  /**
   * Ack of many rows the transaction holds (a shared claim's), in one statement: delete them, or mark
   * `processedAt`. At least one id; the caller keeps each statement within the engine's parameter limit.
   * `null` where the engine cannot (`capabilities.heldRowsAckTogether`): ack each row with `settleAck` there.
   */
  settleAckMany(spec: InboxDescription, ids: readonly unknown[], now: Date): CompiledQuery | null;
  /** Retry: keep the row (its attempt stays counted), hidden until `retryAt` when the table has `retryAfter`. */
  settleRetry(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery | null;
}

/** The lease form (every engine). Each statement commits on its own unless said otherwise. */
export interface LeaseStatements {
  /**
   * One statement that claims: sets the deadline, counts the attempt, returns the rows
   * (Postgres: a CTE that picks `FOR UPDATE SKIP LOCKED`, then `UPDATE … RETURNING`; SQLite: an
   * update of the ids a subquery picks, with `RETURNING`).
   * `null` on engines that need two statements (MySQL/MariaDB): use `selectClaimable` then `stampClaimed` in one transaction.
   */
  claim(spec: InboxDescription, options: LeaseClaimOptions): CompiledQuery<RawRow> | null;
  /**
   * Fifo where the claim cannot lock its group itself (MySQL/MariaDB): `SELECT id … FOR UPDATE SKIP
   * LOCKED` of the group's rows that hold or may take its head, run first in the claim's transaction;
   * its row count goes to the claim as `fifoLocked`. `null` for other tables and engines.
   */
  lockFifoGroup(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow> | null;
  /** `SELECT … FOR UPDATE SKIP LOCKED` of claimable rows (the first half of a two-statement claim). */
  selectClaimable(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /** Writes the deadline and counts the attempt on the selected rows (the second half). */
  stampClaimed(spec: InboxDescription, ids: readonly unknown[], until: Date, precision: number): CompiledQuery;
  /** Moves every lease in `leases` to `until` in one statement; each row only while it still holds its token. Returns the extended ids where the engine can. */
  extend(spec: InboxDescription, leases: readonly HeldLease[], until: Date, precision: number): CompiledQuery<RawRow>;
  /** Reads the current deadlines of `ids` (to tell which extensions took where `extend` returns nothing). */
  readLeases(spec: InboxDescription, ids: readonly unknown[]): CompiledQuery<RawRow>;
  /** Ack while the lease is held: delete, or mark `processedAt`. Zero rows affected: the lease was lost. */
  settleAck(spec: InboxDescription, lease: HeldLease, now: Date, precision: number): CompiledQuery;
  /** Release while held: `locked_until = NULL` (or `retryAt` in the retryAfter column / the lease column), attempt not counted again. */
  settleRetry(spec: InboxDescription, lease: HeldLease, retryAt: Date | null, precision: number): CompiledQuery;
  /**
   * Ack of many leases in one statement, each row only while it still holds its token: a delete
   * (or a processedAt update) whose condition has one arm per distinct token with its list of ids.
   * Where the engine has `updateReturning`, `RETURNING id` names the acks that took. Elsewhere
   * (MySQL/MariaDB) run `selectHeld` first in one short transaction: the ids it returns are the
   * acks that take; every other lease was lost.
   */
  settleAckMany(spec: InboxDescription, leases: readonly HeldLease[], now: Date, precision: number): CompiledQuery<RawRow>;
  /** The ids of the leases still held, their rows locked until commit (`FOR UPDATE`; no lock clause on SQLite). */
  selectHeld(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow>;
  /**
   * Gives back claimed rows no handler received: `locked_until = NULL` and the claim's attempt
   * undone (`attempt = attempt - 1`), each row only while it holds its token; `RETURNING id` where the engine can.
   */
  releaseUnstarted(spec: InboxDescription, leases: readonly HeldLease[], precision: number): CompiledQuery<RawRow>;
  /**
   * Ordered keys (an order key, or a group with `perKey`), after a claim has committed: of the rows
   * it took (`ids`), those whose key holds `perKey` or more other unprocessed rows with a lease live
   * at `now`. Claims that ran side by side can each miss the other's lease (each reads the leases
   * committed when it began); the later to commit sees the other's here. `null`: no ordered key.
   */
  selectCrowded(spec: InboxDescription, options: Pick<ClaimOptions, "perKey" | "now">, ids: readonly unknown[]): CompiledQuery<RawRow> | null;
}

/** The advisory form (every engine; SQLite keeps its keys in the process). */
export interface AdvisoryStatements {
  /** Claimable rows in claim order with the columns their keys need; no lock is taken. */
  selectCandidates(spec: InboxDescription, options: ClaimOptions): CompiledQuery<RawRow>;
  /** Try the key's lock without waiting, on the delivery's own connection; returns one row `{ locked: 1 | 0 }`. `null` where locks live in the process. */
  tryLock(key: string, database: string): CompiledQuery<{ locked: unknown }> | null;
  /** Releases the key's lock. `null` where locks live in the process. */
  unlock(key: string, database: string): CompiledQuery | null;
  /**
   * Takes the row after its key was locked: counts the attempt, while the row is still claimable.
   * One row affected, or it is gone. Returns the row as counted where the engine has
   * `UPDATE … RETURNING` (no row: gone); elsewhere `readTaken` reads it back.
   */
  take(spec: InboxDescription, id: unknown, now: Date): CompiledQuery<RawRow>;
  /** Reads a taken row back on the session holding its key, its attempt as the take counted it; `null` where `take` returns the row. */
  readTaken(spec: InboxDescription, id: unknown): CompiledQuery<RawRow> | null;
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  settleRetry(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery | null;
}

/** Publishing a row. */
export interface PublishStatements {
  /** The insert of new rows; generated columns left out; values keyed by column name, already encoded. Returns the new ids where the engine can. */
  insert(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow>;
  /**
   * Rows that may carry a dedup key, where the engine has `INSERT … RETURNING` (Postgres, SQLite):
   * `ON CONFLICT (key) DO NOTHING RETURNING id, key`, so a held key inserts nothing and fails
   * nothing. `null` on MySQL/MariaDB: a keyed row is a plain insert there, one per statement, and
   * a duplicate-key error (1062) says the key is held.
   */
  insertKeyed(spec: InboxDescription, rows: readonly RawRow[]): CompiledQuery<RawRow> | null;
  /** The id and key of the rows holding `keys` (a locking read on MySQL/MariaDB, which sees the latest commit). */
  keyedRows(spec: InboxDescription, keys: readonly string[]): CompiledQuery<RawRow>;
  /**
   * Debounce on a lease table: the row holding `row`'s key takes its other values unless its lease
   * runs past `now` (in work). Affects 0 or 1 rows.
   */
  replaceKeyed(spec: InboxDescription, row: RawRow, now: Date): CompiledQuery;
}

/** Adds columns to the table `createInboxTable` creates: Kysely's own builder, so any column Kysely can describe fits. */
export type ExtendTable = (table: CreateTableBuilder<string, string>) => CreateTableBuilder<string, string>;

/**
 * Per-table storage settings of a queue table, by name: `{ fillfactor: 70 }` is
 * `WITH (fillfactor = 70)` on Postgres. A name is a storage parameter Postgres knows
 * (`fillfactor`, `autovacuum_vacuum_scale_factor`, `toast.autovacuum_enabled` …).
 */
export type QueueStorage = Readonly<Record<string, number | boolean>>;

/** How a queue table is created, beyond its description. */
export interface TableOptions {
  /**
   * The queue table's storage settings, on engines that have per-table settings (Postgres:
   * `CREATE TABLE … WITH (…)`); MySQL/MariaDB and SQLite have none and take nothing from this.
   * Unset: the engine's defaults for a table that churns (on Postgres `fillfactor = 70` and an
   * autovacuum that starts early and is never throttled). `false`: none, the server's own. A record
   * replaces the defaults: give every setting the table should have. A table with a `lastError` or
   * `failedAttempts` column is a dead-letter destination, written once and rarely changed, and gets
   * none unless a record is given. When `extend` ends the statement itself (Kysely's `modifyEnd`, a
   * `PARTITION BY` or a `TABLESPACE`), the settings are left out: add a `with (…)` there if wanted.
   */
  readonly queueStorage?: false | QueueStorage;
}

/** Creating a queue table from its description. */
export interface TableStatements {
  /**
   * `CREATE TABLE` with every described column typed for this engine, then the indexes the claims
   * read (see `createTableQueries`). `extend` adds columns (a data column described without a type);
   * a data column with no type that `extend` does not add fails, naming the column.
   */
  create(spec: InboxDescription, extend?: ExtendTable, options?: TableOptions): CompiledQuery[];
}

/** What a metrics reader samples now and then (never on the delivery path). */
export interface ObserveStatements {
  /** One row with `depth`: the rows still to be finished (unprocessed; of `group` where the table has one). */
  queueDepth(spec: InboxDescription, options: { readonly group?: string }): CompiledQuery<{ depth: unknown }>;
}

/** The startup checks. */
export interface SchemaStatements {
  /**
   * The real table's columns: `name`, `data_type`, `precision`, `nullable` (`YES`/`NO` or 1/0); read
   * in `schema` (a Postgres schema, a MySQL/MariaDB database) when given, else the connection's own.
   */
  describeTable(table: string, schema?: string): CompiledQuery<RawRow>;
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

/** One row of `SchemaStatements.cluster()`. */
export interface ClusterVariable {
  readonly Variable_name: string;
  readonly Value: string;
}

/**
 * Waking other processes through the server (Postgres LISTEN/NOTIFY). Each statement runs on its
 * own session: listening holds a connection for the app's life.
 */
export interface NotifyStatements {
  /** Starts listening on `channel` (an identifier, quoted by Kysely) on this session. */
  listen(channel: string): CompiledQuery;
  /** Stops listening on every channel of this session, before the connection goes back to the pool. */
  unlistenAll(): CompiledQuery;
  /** Notifies `channel` with an empty payload; inside a transaction it goes out at commit, and a rollback sends nothing. */
  notify(channel: string): CompiledQuery;
}

/** Everything one engine provides. */
/** What a dead-letter move records where the destination has columns for it. */
export interface DeadLetterRecord {
  /** The last error (`lastError` column). */
  readonly lastError: string | null;
  /** The attempts spent (`failedAttempts` column). */
  readonly attempts: number | null;
}

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

/** Where one limit's slots are (`FlowStatements`): the queue table's schema and the limit's name. */
export interface SlotPlace {
  readonly schema?: string | undefined;
  readonly name: string;
}

/** Which free rate slots a start may take: at most `take` of the first `max`, whose last start is at or before `freeBefore` (ms). */
export interface RateSlotPick {
  readonly max: number;
  readonly take: number;
  readonly freeBefore: number;
}

/**
 * Caps on work in progress and rate limits, counted in the database: sqlinbox's own slot table
 * (`sqlinbox_slots`, one row per slot of one limit) and the live leases of a lease table.
 */
export interface FlowStatements {
  /** The slot table's name (in the queue table's schema, when it names one). */
  readonly slotTable: string;
  /** `CREATE TABLE IF NOT EXISTS` of the slot table. */
  createSlotTable(schema?: string): CompiledQuery;
  /** Inserts the missing slots `0 … count - 1` of one limit; existing ones are left as they are. */
  ensureSlots(place: SlotPlace, count: number): CompiledQuery;
  /** Takes free rate slots and stamps them `reserve`, returning `slot`s; `null` without `UPDATE … RETURNING` (use `selectRateSlots` then `stampSlots`). */
  takeRateSlots(place: SlotPlace, pick: RateSlotPick, reserve: number): CompiledQuery<{ slot: unknown }> | null;
  /** The free rate slots, locked until the transaction ends where the engine locks rows. */
  selectRateSlots(place: SlotPlace, pick: RateSlotPick): CompiledQuery<{ slot: unknown }>;
  /** Stamps slots (with `fence`: only those still stamped `fence`). */
  stampSlots(place: SlotPlace, slots: readonly number[], stamp: number, fence?: number): CompiledQuery;
  /** One row with `oldest`: the oldest last start among the first `max` slots. */
  oldestStart(place: SlotPlace, max: number): CompiledQuery<{ oldest: unknown }>;
  /** One row with `started`: the starts a rate limit admitted after `since` (ms), reservations included. */
  startsSince(place: SlotPlace, max: number, since: number): CompiledQuery<{ started: unknown }>;
  /** Locks up to `take` of a cap's first `n` slots for the transaction (`FOR UPDATE SKIP LOCKED`); `null` without row locks. */
  lockCapSlots(place: SlotPlace, n: number, take: number): CompiledQuery<{ slot: unknown }> | null;
  /** One row with `live`: the rows of a lease table whose deadline is in the future (unprocessed, of `group`). */
  countLiveLeases(spec: InboxDescription, options: { readonly now: Date; readonly group?: string }): CompiledQuery<{ live: unknown }>;
}

/** A row of the control table: a paused route (`kind` `"pause"`, `target` `""`), or a cancel request (`"cancel"`, the row's id as text). */
export interface ControlRow {
  readonly kind: string;
  readonly route: string;
  readonly target: string;
}

/**
 * Pause, resume and cancel (every engine): the control table `sqlinbox_control` that every app
 * reads once per poll interval, and the statements that take a row not in work out of its queue.
 */
export interface ControlStatements {
  /** The control table's name. */
  readonly table: string;
  /** `CREATE TABLE IF NOT EXISTS sqlinbox_control (kind, route, target, requested_at)`, keyed by (kind, route, target). */
  create(): CompiledQuery[];
  /** Every pause and cancel request. */
  read(): CompiledQuery<ControlRow>;
  /** Pauses a route: run in one transaction, so a pause given twice leaves one row. */
  pause(route: string, now: Date): CompiledQuery[];
  /** Ends a route's pause. */
  resume(route: string): CompiledQuery;
  /** Records a cancel request for a row (its id as text): run in one transaction. */
  requestCancel(route: string, target: string, now: Date): CompiledQuery[];
  /** Removes a cancel request once it is served. */
  clearCancel(route: string, target: string): CompiledQuery;
  /** Removes cancel requests older than `before`. */
  purgeCancels(before: Date): CompiledQuery;
  /** Row lock: locks the row unless a claim holds it (`FOR UPDATE SKIP LOCKED`); `null` without row locks (SQLite). */
  lockQueued(spec: InboxDescription, id: unknown): CompiledQuery<{ id: unknown }> | null;
  /** The row (its id and advisory key columns) unless it is done. */
  findRow(spec: InboxDescription, id: unknown): CompiledQuery<RawRow>;
  /** Deletes the row (or marks it processed) unless it is done or a live lease holds it. */
  removeQueued(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
}

export interface EngineDialect {
  readonly capabilities: EngineCapabilities;
  readonly time: TimeCodec;
  /** A transaction on a connection the runtime holds itself (a row-lock claim's, an advisory move's). */
  readonly transaction: TransactionStatements;
  /** `null` where the engine has no row locks (SQLite): a row-lock table there is `UnsupportedForm`. */
  readonly rowLock: RowLockStatements | null;
  readonly lease: LeaseStatements;
  readonly advisory: AdvisoryStatements;
  readonly publish: PublishStatements;
  /** The table from its description. */
  readonly table: TableStatements;
  readonly deadLetter: DeadLetterStatements;
  /** Pauses and cancel requests in the control table; a row not in work taken out of its queue. */
  readonly control: ControlStatements;
  readonly schema: SchemaStatements;
  readonly observe: ObserveStatements;
  /** Caps on work in progress and rate limits (`InboxQueue.maxInWork`, `InboxQueue.rateLimit`). */
  readonly flow: FlowStatements;
  /** `null` where the server relays no notifications (`capabilities.listenNotify` is false): other processes see a publish at their next poll. */
  readonly notify: NotifyStatements | null;
  /** Refuses a server below the floor with `ServerTooOld`, naming both versions. Returns a label such as "MariaDB 10.11.19". */
  checkServerVersion(version: string): string;
  /** True when the driver's error says a table the statement names does not exist (dropped, or never created). */
  missingTable(error: unknown): boolean;
  /** Normalizes the rows of `describeTable`. */
  readFoundColumns(rows: readonly RawRow[]): FoundColumn[];
  /**
   * The OpenTelemetry `db.system.name` of the server `checkServerVersion` labelled (`"postgresql"`,
   * `"mysql"`, `"mariadb"`, `"sqlite"`).
   */
  dbSystemName(serverLabel: string): string;
}
