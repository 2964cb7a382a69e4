import type { AnyInboxSpec, HasLeaseColumn, HasRole, InboxDescription, ProgressOf, ResultOf, RoleMarker, RolesOf } from "@sqlinbox/core/internal";
import { deliveredAttempt, type RawRow } from "@sqlinbox/kysely-dialects/internal";
import type { Clock } from "../clock.js";
import { heldOutsideRow, type HoldPlace } from "../claim/held/job-hold.js";

/** What a job is now, as one row of its table says (see `JobState`). */
export type JobStateName = "scheduled" | "waiting" | "running" | "done" | "deadLettered" | "gone";

type JobColumn<Has extends boolean, K extends string, V> = Has extends true ? { readonly [P in K]: V } : { readonly [P in K]?: never };

/**
 * The columns of a job's row that a state carries, each only where the table has it: `attempt`
 * (the attempt column: the delivery in work, or the last one made; 0 before the first, for a column
 * that starts at 1 as the generated DDL has it), `runAt` (the retryAfter column: `null` when unset),
 * `leaseUntil` (the lease column), `lastError` (a last-error column), `result` (the result column:
 * what the ack wrote, `null` before it), `progress` (the progress column: the last value reported, `null` before one).
 */
export type JobColumns<R extends readonly RoleMarker[]> = JobColumn<HasRole<R, "attempt">, "attempt", number> &
  JobColumn<HasRole<R, "retryAfter">, "runAt", Date | null> &
  JobColumn<HasLeaseColumn<R>, "leaseUntil", Date | null> &
  JobColumn<HasRole<R, "lastError">, "lastError", string | null> &
  JobColumn<HasRole<R, "result">, "result", ResultOf<R> | null> &
  JobColumn<HasRole<R, "progress">, "progress", ProgressOf<R> | null>;

/** A row still to run or running: `scheduled` (its run-at is ahead, on the database's clock), `waiting` (due), `running` (held in work by its form). */
export type LiveJobState<R extends readonly RoleMarker[]> = { readonly state: "scheduled" | "waiting" | "running"; readonly id: string } & JobColumns<R>;
/** A handled row a table with a processedAt column keeps (acked, dropped, or cancelled before it ran): only on such a table. */
export type DoneJobState<R extends readonly RoleMarker[]> =
  HasRole<R, "processedAt"> extends true ? { readonly state: "done"; readonly id: string; readonly processedAt: Date } & JobColumns<R> : never;
/** The row was moved to its dead-letter table or group: its last error and the attempts spent where the destination records them (else `null`). */
export interface DeadLetteredJobState {
  readonly state: "deadLettered";
  readonly id: string;
  readonly lastError: string | null;
  readonly attempts: number | null;
}
/** No row under the id: handled and deleted, cancelled, or never published (which no read can tell apart). */
export interface GoneJobState {
  readonly state: "gone";
  readonly id: string;
}

/**
 * A job's state, typed by its table: each state carries the columns the table has (`JobColumns`),
 * and `done` exists only on a table with a processedAt column.
 */
export type JobState<S extends AnyInboxSpec = AnyInboxSpec> = LiveJobState<RolesOf<S>> | DoneJobState<RolesOf<S>> | DeadLetteredJobState | GoneJobState;

/** Where a job's dead letters go, as `InboxQueue.deadLetter` takes it: a table described like the job's (keeping the id), or a group of its table. */
export type JobDeadLetterPlace = { readonly table: InboxDescription } | { readonly group: string };

/** What reading one job's state needs: its table, id and dead-letter place, the database, its clock and this process's advisory keys. */
export interface JobPlace extends HoldPlace {
  readonly route: string;
  readonly deadLetter: JobDeadLetterPlace | undefined;
  readonly clock: Clock;
}

/** A state as the runtime builds it (its columns checked against the table's roles by `JobState`'s type). */
type AnyState = { readonly state: JobStateName; readonly id: string } & Record<string, unknown>;

/**
 * Reads the job's state: its row (one statement), then only for a due row whose form holds rows
 * outside the row, whether it is in work (a row-lock probe, or an advisory key lookup). No row: its
 * dead-letter table by id when it has one, else `gone`.
 */
export async function readJobState(place: JobPlace): Promise<AnyState> {
  const { spec, database } = place;
  const jobs = database.dialect.jobs;
  const row = (await database.execute("observe", jobs.read(spec, place.id))).rows[0];
  const id = String(place.id);
  if (row === undefined) return goneOrDeadLettered(place, id);
  const time = database.dialect.time;
  const columns = columnsOf(spec, row, (raw) => time.decode(raw));
  const processedAt = spec.processedAt === undefined ? null : time.decode(row[spec.processedAt.name]);
  if (processedAt !== null) return { state: "done", id, processedAt, ...columns };
  const dead = place.deadLetter;
  if (dead !== undefined && "group" in dead && spec.group !== undefined && row[spec.group.name] === dead.group) {
    const attempts = spec.failedAttempts !== undefined ? numberOrNull(row[spec.failedAttempts.name]) : ((columns["attempt"] as number | undefined) ?? null);
    return { state: "deadLettered", id, lastError: textOrNull(spec.lastError === undefined ? null : row[spec.lastError.name]), attempts };
  }
  const now = place.clock.now().getTime();
  const ahead = (value: unknown): boolean => {
    const at = value instanceof Date ? value : null;
    return at !== null && at.getTime() > now;
  };
  // A live lease is in the row; a lease table without a retryAfter column keeps a run-at there too (read as running).
  if (spec.lease !== undefined && ahead(columns["leaseUntil"])) return { state: "running", id, ...columns };
  if (spec.retryAfter !== undefined && ahead(columns["runAt"])) return { state: "scheduled", id, ...columns };
  const held = await heldOutsideRow(place, row);
  if (held === "gone") return readJobState(place);
  if (held === "free") return { state: "waiting", id, ...columns };
  // The row-lock claim's count commits with its settlement: the attempt in work is one past the row's.
  if (held === "held, count uncommitted" && typeof columns["attempt"] === "number") columns["attempt"] += 1;
  return { state: "running", id, ...columns };
}

async function goneOrDeadLettered(place: JobPlace, id: string): Promise<AnyState> {
  const dead = place.deadLetter;
  if (dead === undefined || !("table" in dead)) return { state: "gone", id };
  const destination = dead.table;
  const row = (await place.database.execute("observe", place.database.dialect.jobs.readDeadLetter(destination, place.id))).rows[0];
  if (row === undefined) return { state: "gone", id };
  return {
    state: "deadLettered",
    id,
    lastError: textOrNull(destination.lastError === undefined ? null : row[destination.lastError.name]),
    attempts: numberOrNull(destination.failedAttempts === undefined ? null : row[destination.failedAttempts.name]),
  };
}

/** The row's state columns, under `JobColumns`' names, each only where the table has its column. */
export function columnsOf(spec: InboxDescription, row: RawRow, decode: (raw: unknown) => Date | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (spec.attempt !== undefined) out["attempt"] = deliveredAttempt(row[spec.attempt.name]);
  if (spec.retryAfter !== undefined) out["runAt"] = decode(row[spec.retryAfter.name]);
  if (spec.lease !== undefined) out["leaseUntil"] = decode(row[spec.lease.name]);
  if (spec.lastError !== undefined) out["lastError"] = textOrNull(row[spec.lastError.name]);
  if (spec.result !== undefined) out["result"] = jsonOrNull(row[spec.result.name]);
  if (spec.progress !== undefined) out["progress"] = jsonOrNull(row[spec.progress.name]);
  return out;
}

/** A result or progress column, read as its JSON text (`jobs.read` casts it): the value, or `null` when the column is empty. */
function jsonOrNull(value: unknown): unknown {
  const text = textOrNull(value);
  return text === null ? null : (JSON.parse(text) as unknown);
}

/** A text column's value as text (bytes decoded as UTF-8), `null` when empty. */
export function textOrNull(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return value instanceof Uint8Array ? Buffer.from(value).toString("utf8") : String(value);
}

/** A count column's value as a number, `null` when empty. */
export function numberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}
