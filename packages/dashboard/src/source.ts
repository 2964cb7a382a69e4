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
  /**
   * Present on a large table, whose counts were read through indexes up to a cap instead of over
   * every row (see `CappedCounts`); absent when every number is an exact count of the whole table.
   */
  readonly capped?: CappedCounts;
}

/** A count a large table's status may give as a lower bound. */
export type CappedCount = "ready" | "waiting" | "inWork" | "delayed" | "done" | "dead" | "attempts" | "expiringLeases" | "oldestAgeMs";

/**
 * How a large table's status was read: the table's estimated rows passed the threshold, so each
 * state was counted through an index up to `cap` rows. The rows not done are read as one sample,
 * the first `cap` of them in claim order, and told apart there (a live lease has no index); done
 * rows and dead letters are each counted up to `cap`. Every count in `atLeast` reached its cap:
 * the page and the CLI show it as "10,000+", and it is a lower bound (per group as well as in the
 * totals); the others are exact.
 */
export interface CappedCounts {
  /** The most rows any one count reads. */
  readonly cap: number;
  /** The estimate that chose capped counts: max(id) − min(id) + 1 through the primary key. */
  readonly estimatedRows: number;
  /** The counts that are lower bounds, not exact. Empty when no count reached its cap. */
  readonly atLeast: readonly CappedCount[];
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

/** What a bulk action of the job browser does to each row (see `sqlinbox jobs cancel|delete|retry|reschedule`). */
export type BulkJobAction = "cancel" | "delete" | "retry" | "reschedule";

/**
 * A bulk action on a table's rows: the named `ids` (of dead letters when `state` is
 * `deadLettered`), or every row of `state` whose columns equal `equals`. `dryRun` counts the rows it
 * would take and changes nothing.
 */
export interface BulkJobRequest {
  readonly table: string;
  readonly action: BulkJobAction;
  readonly ids?: readonly string[];
  readonly state?: "scheduled" | "waiting" | "running" | "deadLettered";
  readonly equals: Readonly<Record<string, unknown>>;
  /** `reschedule`: when the rows run. */
  readonly runAt?: Date;
  readonly dryRun: boolean;
}

/**
 * What a bulk action took (`matched`) and, unless it was a dry run, did: `touched` rows changed
 * (removed, deleted, made due, rescheduled, moved back); `signalled` rows in work whose handler is
 * told to stop (cancel); `inWork` rows left alone because a worker holds them; `notFound` rows gone
 * (or done) meanwhile. `refused`: the request cannot run, in words.
 */
export type BulkJobReport =
  | { readonly matched: number; readonly counts?: { readonly touched: number; readonly signalled: number; readonly inWork: number; readonly notFound: number } }
  | { readonly refused: string };

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
  /** Runs a bulk action of the job browser (a write), each row fenced as `cancel` fences one. Absent: the Jobs view offers none. */
  bulkJobs?(request: BulkJobRequest): Promise<BulkJobReport>;
}
