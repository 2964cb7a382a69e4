import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression } from "kysely";
import type { RawRow } from "../types.js";

/**
 * A queue table as the operator tools see it: its description, and a time column the real
 * table has beside it (`created_at` by convention) from which the oldest row's age is read.
 */
export interface OperatorTable {
  readonly spec: InboxDescription;
  /** A column holding when each row was written; without it the oldest age is unknown. */
  readonly createdAt?: string | undefined;
}

/**
 * Where a source's dead letters sit: another table described like the source, or a
 * group of the same table (the table has a group column).
 */
export type DeadLetterPlace = { readonly kind: "table"; readonly destination: InboxDescription } | { readonly kind: "group"; readonly group: string; readonly deadGroup: string };

/**
 * The row states an operator asks about. `ready`: a claim could take the row now (on a fifo table,
 * only its group's head); `waiting`: due, but behind its fifo group's head (fifo tables only);
 * `delayed`, `leased`, `done`; `all` is every row.
 */
export type RowState = "ready" | "waiting" | "delayed" | "leased" | "done" | "all";

export interface PeekOptions {
  readonly state: RowState;
  readonly now: Date;
  /** Only rows of this group (a table with a group column). */
  readonly group?: string | undefined;
  /** Only these ids. */
  readonly ids?: readonly unknown[] | undefined;
  /** Only rows handled before this time (processedAt): what `sqlinbox purge --older-than` deletes. A table with no processedAt column refuses it. */
  readonly processedBefore?: Date | undefined;
  readonly limit: number;
}

/**
 * Every statement `sqlinbox` (the CLI) and its dashboard run. Pure: descriptions in, compiled
 * queries out. Where the engine cannot answer from outside the application, or the table has
 * nothing to ask about, the statement refuses: read the trait each names first.
 */
export interface OperatorStatements {
  /**
   * One row per group (one row in all without a group column): `grp`, `total`, `done`,
   * `leased`, `delayed`, `claimable` (not done, not delayed, no live lease; on a fifo table only
   * the group's head), on a fifo table `due` (the rows ready or waiting; `waitingOf` reads the
   * waiting ones as `due − claimable`), `oldest` (the smallest created-at of rows not done, or
   * NULL), `max_attempt`, `max_id`.
   */
  countByState(table: OperatorTable, now: Date): CompiledQuery<RawRow>;
  /** `grp`, `attempt`, `rows` of rows not done: the attempts histogram. For a table with an attempt column. */
  attemptHistogram(spec: InboxDescription): CompiledQuery<RawRow>;
  /** Live leases that run out before `until`, soonest first: `id`, `grp`, `locked_until`, `attempt`. For a table with a lease column. */
  expiringLeases(spec: InboxDescription, now: Date, until: Date, limit: number): CompiledQuery<RawRow>;
  /**
   * Row lock: the claimable-by-state rows a `FOR UPDATE SKIP LOCKED` probe can take (`id`, `grp`);
   * with `limit`, the first that many in claim order (a large table's probe).
   * Run it in a transaction and roll back; the claimable rows it cannot take are in work. Where
   * the engine locks rows (`capabilities.rowLock`: not SQLite).
   */
  lockableProbe(spec: InboxDescription, now: Date, limit?: number): CompiledQuery<RawRow>;
  /**
   * Advisory: the claimable-by-state rows with the columns their keys are made of (`id`, `grp`, key
   * columns), in id order or (a large table) in claim order.
   */
  advisoryCandidates(spec: InboxDescription, now: Date, limit: number, order?: "id" | "claim"): CompiledQuery<RawRow>;
  /**
   * Advisory: which of `keys` (at least one) some session holds right now; one row `{ key }` per
   * held key, `key` as given. Where locks live in the server session (`capabilities.advisoryLocks`
   * is `"session"`); on SQLite they live in the application's process, out of sight.
   */
  heldAdvisoryKeys(keys: readonly string[], database: string): CompiledQuery<{ key: string }>;
  /** Rows with every column of the real table (`select *`), in id order. */
  peek(table: OperatorTable, options: PeekOptions): CompiledQuery<RawRow>;
  /** One row with `rows`: how many rows `purge` with the same options deletes. */
  countRows(table: OperatorTable, options: Omit<PeekOptions, "limit">): CompiledQuery<RawRow>;
  /** The dead letters of a source (`select *`), in id order; only `ids` when given. */
  peekDeadLetters(source: InboxDescription, place: DeadLetterPlace, limit: number, ids?: readonly unknown[]): CompiledQuery<RawRow>;
  /** How many dead letters there are, per group of the destination: `grp`, `rows`. */
  countDeadLetters(source: InboxDescription, place: DeadLetterPlace): CompiledQuery<RawRow>;
  /**
   * The next chunk of dead-letter ids to move back, locked until commit where the engine can
   * (`FOR UPDATE`, so two retries never move one row twice), in id order.
   */
  lockDeadLetterIds(source: InboxDescription, place: DeadLetterPlace, limit: number, ids?: readonly unknown[]): CompiledQuery<RawRow>;
  /**
   * Moves dead letters back, as the statements of one transaction, in order. A table destination:
   * an insert-select copies the given ids' shared columns into the source, then a delete removes
   * them from the destination; the generated id, the attempt, the lease, retryAfter and
   * processedAt are left to the source's defaults. A group: one `UPDATE` that sets the group back
   * and resets attempt, lease, retryAfter and processedAt.
   */
  retryDeadLetters(source: InboxDescription, place: DeadLetterPlace, ids: readonly unknown[]): readonly CompiledQuery[];
  /** Deletes rows of a state (`done`, `all`, …) or the given ids; dead letters through `purgeDeadLetters`. */
  purge(table: OperatorTable, options: Omit<PeekOptions, "limit">): CompiledQuery;
  /**
   * One row `{ high_water }`: the last id the table's generator handed out, kept when the table
   * drains (the engine's `operator.idHighWater`). For a table whose id column is generated.
   */
  idHighWater(spec: InboxDescription): CompiledQuery<RawRow>;
  /** One row `{ rows }`: the rows whose processedAt falls in `(from, to]`. For a table with a processedAt column. */
  countProcessedBetween(spec: InboxDescription, from: Date, to: Date): CompiledQuery<RawRow>;
  /** One row `{ lo, hi }`: the smallest and largest id (both ends of the primary key), from which a status estimates a table's rows. */
  rowSpan(spec: InboxDescription): CompiledQuery<RawRow>;
  /**
   * A large table's `countByState`: the same columns over the first `cap` rows not done in claim
   * order (through the claim index), `done` 0, one row per group and attempt (`attempt`), plus
   * `sampled` (the rows each stands for; the sample holds at most `cap`, and below it the counts are exact).
   */
  sampledState(table: OperatorTable, now: Date, cap: number): CompiledQuery<RawRow>;
  /** Done rows per group, at most `cap` in all, in processedAt order: `grp`, `rows`. For a table with a processedAt column. */
  cappedDone(spec: InboxDescription, cap: number): CompiledQuery<RawRow>;
  /** `expiringLeases` among `sampledState`'s rows. */
  sampledExpiringLeases(table: OperatorTable, now: Date, until: Date, limit: number, cap: number): CompiledQuery<RawRow>;
  /** `countDeadLetters` over at most `cap` dead letters. */
  cappedCountDeadLetters(source: InboxDescription, place: DeadLetterPlace, cap: number): CompiledQuery<RawRow>;
  /** Deletes dead letters: all of them, or the given ids. */
  purgeDeadLetters(source: InboxDescription, place: DeadLetterPlace, ids?: readonly unknown[]): CompiledQuery;
}

/**
 * What differs per engine among the operator statements: one of each engine's traits
 * (`operator` in its `engine.ts`). Whether rows can be locked is `capabilities.rowLock`.
 */
export interface OperatorTraits {
  /** Which of `keys` (at least one) a session holds; `"process registry"` where keys live in the application's process. */
  readonly heldAdvisoryKeys: ((keys: readonly string[], database: string) => CompiledQuery<{ key: string }>) | "process registry";
  /** The value an attempt column gets back on a retried dead letter: the column's default. */
  attemptDefault(spec: InboxDescription): Expression<unknown>;
  /**
   * One row `{ high_water }`: the last id the table's generator handed out (a sequence, an
   * auto-increment, SQLite's `sqlite_sequence`), which a drained table keeps; NULL before the first.
   */
  idHighWater(spec: InboxDescription): CompiledQuery<RawRow>;
}
