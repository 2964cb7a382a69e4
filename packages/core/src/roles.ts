/**
 * The role markers of a table description. `InboxSpec<[Attempt, Lease<Date>, Payload<Report>]>`
 * lists the roles a table's columns play; the id role is always there and not listed.
 */
export interface Attempt {
  readonly role: "attempt";
}
/** A lease column: selects the lease form. `T` is the deadline's type in the application. */
export interface Lease<T = Date> {
  readonly role: "lease";
  readonly deadline?: T;
}
/** A payload column: the handler receives the decoded `T`. Without it, a handler receives the row. */
export interface Payload<T = unknown> {
  readonly role: "payload";
  readonly payload?: T;
}
export interface RetryAfter {
  readonly role: "retryAfter";
}
export interface ProcessedAt {
  readonly role: "processedAt";
}
export interface Group {
  readonly role: "group";
}
/** A dead-letter destination's column for the last error a moved row failed with. */
export interface LastError {
  readonly role: "lastError";
}
/** A dead-letter destination's column for the attempts a moved row had spent. */
export interface FailedAttempts {
  readonly role: "failedAttempts";
}
/**
 * A result column: an ack writes the handler's result (`ctx.ack(result)`) into it, as JSON, in
 * the ack's own statement. `T` is the result's type. Only on a table that keeps handled rows.
 */
export interface Result<T = unknown> {
  readonly role: "result";
  readonly result?: T;
}
/** A progress column: `ctx.progress(value)` writes `T` into it, as JSON, while the row is in work. */
export interface Progress<T = unknown> {
  readonly role: "progress";
  readonly progress?: T;
}
/** With a group: one row of a group in work at a time, in order. */
export interface Fifo {
  readonly role: "fifo";
}
export interface Priority {
  readonly role: "priority";
}
/**
 * An order key column (`account_id`): rows that share a key run one at a time (or up to
 * `maxInWorkPerKey(n)`), in id order, across every process; different keys run side by side.
 */
export interface OrderKey {
  readonly role: "orderKey";
}
/** A headers column: JSON text of string pairs (a W3C `traceparent`, …) carried from publish to `keys.headers`. */
export interface MessageHeaders {
  readonly role: "headers";
}
/**
 * A dedup key column: a unique index holds one row per key, so a publish with a key that a row
 * already holds inserts nothing. NULL (a publish without a key) is never a duplicate.
 */
export interface DedupKey {
  readonly role: "key";
}
/** An advisory key template such as `"report-{customer_id}"`: selects the advisory form. */
export interface AdvisoryLock<Template extends string = string> {
  readonly role: "advisoryLock";
  readonly template?: Template;
}

export type RoleMarker =
  | Attempt
  | Lease<unknown>
  | Payload<unknown>
  | RetryAfter
  | ProcessedAt
  | Group
  | Fifo
  | Priority
  | OrderKey
  | MessageHeaders
  | AdvisoryLock
  | LastError
  | FailedAttempts
  | DedupKey
  | Result<unknown>
  | Progress<unknown>;
export type RoleName = RoleMarker["role"];

/** The roles a column can play (the advisory key and fifo are table options, not columns). */
export type ColumnRole =
  | "id"
  | "attempt"
  | "lease"
  | "payload"
  | "retryAfter"
  | "processedAt"
  | "group"
  | "priority"
  | "orderKey"
  | "headers"
  | "lastError"
  | "failedAttempts"
  | "key"
  | "result"
  | "progress"
  | "data";

/** The roles whose column the application fills with a value of its own choosing: their type may be given (`.type("bigint")`). Every other role's type is fixed by the role. */
export type TypedRole = "id" | "orderKey" | "data";

/** `true` when the tuple `R` holds a marker of role `Name`. */
export type HasRole<R extends readonly RoleMarker[], Name extends RoleName> = [Extract<R[number], { readonly role: Name }>] extends [never] ? false : true;

/** The three ways to hold a job while a handler runs. */
export type ClaimForm = "rowLock" | "lease" | "advisory";

/** The claim form a role tuple selects. */
export type FormOf<R extends readonly RoleMarker[]> = HasRole<R, "lease"> extends true ? "lease" : HasRole<R, "advisoryLock"> extends true ? "advisory" : "rowLock";

/** `true` when the role tuple selects the row-lock form (no lease column, no advisory key). */
export type IsRowLockForm<R extends readonly RoleMarker[]> = FormOf<R> extends "rowLock" ? true : false;

/** `true` when the role tuple selects the advisory form (an advisory key). */
export type IsAdvisoryForm<R extends readonly RoleMarker[]> = FormOf<R> extends "advisory" ? true : false;

/** The form as a sentence names it: "row-lock", "lease", "advisory". */
export type FormLabel<R extends readonly RoleMarker[]> = { readonly rowLock: "row-lock"; readonly lease: "lease"; readonly advisory: "advisory" }[FormOf<R>];

/** `true` when the role tuple has a lease column (the lease form). */
export type HasLeaseColumn<R extends readonly RoleMarker[]> = HasRole<R, Lease["role"]>;

/** The payload type a role tuple gives handlers, or `never` in row mode. */
export type PayloadOf<R extends readonly RoleMarker[]> = PayloadOfMarker<R[number]>;
// Distributive over the markers: with no payload marker every member gives `never`. Matching
// `Extract<…>` instead would test `never extends Payload<infer T>`, which holds with T = unknown.
/** The payload type of one role marker (`never` for any other role). */
export type PayloadOfMarker<M> = M extends Payload<infer T> ? T : never;

/** The result type a role tuple's result column holds, or `never` without one. */
export type ResultOf<R extends readonly RoleMarker[]> = ResultOfMarker<R[number]>;
/** The result type of one role marker (`never` for any other role). */
export type ResultOfMarker<M> = M extends Result<infer T> ? T : never;

/** The progress type a role tuple's progress column holds, or `never` without one. */
export type ProgressOf<R extends readonly RoleMarker[]> = ProgressOfMarker<R[number]>;
type ProgressOfMarker<M> = M extends Progress<infer T> ? T : never;

/**
 * What a role column holds in the row a row-mode handler receives, as the driver reads it.
 * Deadlines are `Date` on Postgres and MySQL and ISO-8601 text on SQLite (the column's own type);
 * the lease is `null` where the claim hands over the row as read before its stamp (MySQL, MariaDB).
 * The id and data columns hold what their description says (`unknown` unless given).
 */
export interface RoleColumnValue {
  readonly attempt: number;
  readonly lease: Date | string | null;
  readonly payload: unknown;
  readonly retryAfter: Date | string | null;
  readonly processedAt: Date | string | null;
  readonly group: string;
  readonly priority: number;
  /** JSON as the driver reads it: an object (Postgres JSONB), or its text (a TEXT or MariaDB JSON column). */
  readonly headers: Readonly<Record<string, string>> | string | null;
  readonly lastError: string | null;
  readonly failedAttempts: number | null;
  /** The dedup key; NULL where the row was published without one. */
  readonly key: string | null;
  /** JSON as the driver reads it: the value (Postgres JSONB), or its text (MariaDB, SQLite); NULL until an ack writes one. */
  readonly result: unknown;
  /** JSON as the driver reads it, as for `result`; NULL until a handler reports progress. */
  readonly progress: unknown;
}
/** The row value of a column of `Role` described as holding `Value`. */
export type RowValue<Role extends ColumnRole, Value> = Role extends keyof RoleColumnValue ? RoleColumnValue[Role] : Value;

/** The placeholders of a key template: `"a-{x}-{y}"` gives `"x" | "y"`. */
export type TemplatePlaceholders<T extends string> = T extends `${string}{${infer Name}}${infer Rest}` ? Name | TemplatePlaceholders<Rest> : never;
