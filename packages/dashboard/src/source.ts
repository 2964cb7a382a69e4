/**
 * What the dashboard shows and does, as plain JSON-ready values. The `sqlinbox` CLI provides
 * it (its `status`, `peek` and `retry` are the same code), so the page and the CLI never disagree.
 */

/** The claim forms, as the page names them. */
export type FormName = "rowLock" | "lease" | "advisory";

/** One bar of the attempts histogram: how many rows not done have made this many attempts (0: never delivered; a lease or advisory delivery in work counts its own). */
export interface AttemptBucket {
  readonly attempt: number;
  readonly rows: number;
}

/** One group of a table (the whole table when it has no group column). */
export interface GroupStatus {
  /** The group's value, or `null` for a table without a group column. */
  readonly group: string | null;
  /** Rows a claim could take now (on a fifo table, only each group's head). */
  readonly ready: number;
  /** Fifo tables: due rows behind their group's head, which no claim takes before the head settles; `null` on other tables. */
  readonly waiting: number | null;
  /** Rows a worker holds now; `null` when it cannot be known from outside (advisory on SQLite). */
  readonly inWork: number | null;
  /** Rows hidden until their retryAfter time. */
  readonly delayed: number;
  /** Rows marked processed (a processedAt column), `null` without one. */
  readonly done: number | null;
  /** Dead letters of this group, `null` when no dead-letter place is known. */
  readonly dead: number | null;
  /** Age of the oldest row not done, from a created-at column; `null` without one or when empty. */
  readonly oldestAgeMs: number | null;
  readonly attempts: readonly AttemptBucket[];
}

/** A live lease that runs out soon. */
export interface ExpiringLease {
  readonly id: string;
  readonly group: string | null;
  readonly lockedUntil: string;
  readonly expiresInMs: number;
  /** The attempt being delivered, as the handler reads it: the column's value minus the one its claim counted. */
  readonly attempt: number | null;
}

/** Where a table's dead letters go. */
export type DeadLetterTarget = { readonly kind: "table"; readonly table: string } | { readonly kind: "group"; readonly group: string; readonly deadGroup: string };

/**
 * How a table's settled rows are counted. `processed`: the table keeps its processed rows, and
 * `rows` were processed in `(since, at]` (the database's clock). `idHighWater`: the ack deletes the
 * row and the database generates its ids: `highWater` is the last id handed out (a sequence, an
 * auto-increment, SQLite's AUTOINCREMENT), kept when the table drains, so its growth between two
 * reads is the rows inserted. `unknown`: neither (the application writes the ids), said why.
 */
export type SettledCount =
  | { readonly kind: "processed"; readonly since: string; readonly rows: number }
  | { readonly kind: "idHighWater"; readonly highWater: number }
  | { readonly kind: "unknown"; readonly reason: string };

export interface TableStatus {
  readonly table: string;
  readonly form: FormName;
  readonly groups: readonly GroupStatus[];
  /** Sums over the groups (`inWork` `null` when unknown). */
  readonly totals: Omit<GroupStatus, "group" | "attempts" | "oldestAgeMs"> & { readonly oldestAgeMs: number | null };
  readonly expiringLeases: readonly ExpiringLease[];
  /** What the read tells of the rows settled, from which the dashboard charts the throughput. */
  readonly settled: SettledCount;
  readonly deadLetters: readonly DeadLetterTarget[];
  /** Why a number is missing, in words (for instance "in work: unknown from outside …"). */
  readonly notes: readonly string[];
  /** The caps and rate limits of the table's subscriptions, when a module declares them (`--module`). */
  readonly limits?: readonly FlowLimitStatus[];
}

/** One subscription's flow control, as its module declares it, and what the database holds now. */
export interface FlowLimitStatus {
  /** The subscription's route name. */
  readonly route: string;
  /** `maxInWork(n)`, or `null`. */
  readonly maxInWork: number | null;
  /** Rows in work now (of the route's group, on a grouped table); `null` when unknown from outside. */
  readonly inWork: number | null;
  /** `rateLimit({ max, perMs })`, or `null`. */
  readonly rateLimit: { readonly max: number; readonly perMs: number } | null;
  /** Deliveries started in the last `perMs`; `null` without a rate limit or without the slot table. */
  readonly startedInWindow: number | null;
}

/** A cron schedule a running app recorded (`app.cron`): each tick is one row published to `route`. */
export interface ScheduleStatus {
  readonly route: string;
  /** The app that runs it. */
  readonly app: string;
  /** The cron pattern, as declared. */
  readonly pattern: string;
  /** The IANA zone the ticks are computed in (the app host's when none was declared). */
  readonly timeZone: string;
  /** The next tick (ISO-8601), computed by the app with its cron parser. */
  readonly nextTick: string;
  /** The last tick published (ISO-8601); absent before the first. */
  readonly lastTick?: string;
  /** The next tick passed over a minute ago and no app moved it on: no process runs the schedule; ticks since are missed. */
  readonly overdue: boolean;
}

export interface StatusReport {
  /** When the numbers were read (ISO-8601). */
  readonly at: string;
  /** The dialect: `postgres`, `mysql` (MySQL and MariaDB) or `sqlite`. */
  readonly engine: string;
  /** The server, such as `"PostgreSQL 15.20"` or `"MariaDB 10.11.19"`; absent from sources that do not read it. */
  readonly server?: string;
  readonly tables: readonly TableStatus[];
  /** Routes paused now (`sqlinbox pause`, `broker.pause`); `null` when the database has no control table; absent from sources that do not read it. */
  readonly paused?: readonly string[] | null;
  /** The cron schedules running apps recorded in the control table; absent without a control table, or from sources that do not read it. */
  readonly schedules?: readonly ScheduleStatus[];
}

/** A row as `peek` shows it: every column of the real table, the payload decoded. */
export interface PeekedRow {
  readonly id: string;
  readonly columns: Readonly<Record<string, unknown>>;
  /** The decoded payload (JSON from bytes, text or a JSON column), when the table has a payload column. */
  readonly payload?: unknown;
  /** Where `peek --state all` found a dead letter: its dead-letter table (absent for a row of the table itself). */
  readonly deadLetterTable?: string;
}

/** What a cancel did: the row will never start (`"removed"`), its handler's signal aborts (`"signalled"`), or there is no such row. */
export type CancelResult = "removed" | "signalled" | "not found";

/** What the dashboard reads and, with writes allowed, does. */
export interface DashboardSource {
  /** Every table's status; `settledSince` (an earlier read's `at`) is where processed rows are counted from, the last minute when absent. */
  status(settledSince?: string): Promise<StatusReport>;
  /** The dead letters of a source table, oldest first. */
  deadLetters(table: string, limit: number): Promise<readonly PeekedRow[]>;
  /** Moves dead letters back into their source: the given ids, or all of them. Returns how many moved. */
  retryDeadLetters(table: string, ids: readonly string[] | "all"): Promise<{ readonly moved: number }>;
  /** Pauses a route in every process running it (a write). Absent: the page offers no pause. */
  pause?(route: string): Promise<void>;
  /** Ends a route's pause (a write); `false` when it was not paused. */
  resume?(route: string): Promise<boolean>;
  /** Cancels a row of a table (a write): `"removed"` (never starts), `"signalled"` (in work: its signal aborts), `"not found"`. */
  cancel?(table: string, id: string): Promise<CancelResult>;
}
