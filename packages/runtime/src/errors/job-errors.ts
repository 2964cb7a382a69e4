import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";

/**
 * Why `job.finished()` gave up on a job: it was dead-lettered, cancelled, the wait timed out or
 * was aborted, or no row was ever found under its id.
 */
export type JobEndReason = "deadLettered" | "cancelled" | "timeout" | "aborted" | "notFound";

const SAYS: Readonly<Record<JobEndReason, (detail: string) => string>> = {
  deadLettered: (detail) => `the job was dead-lettered${detail}`,
  cancelled: () => "the job was cancelled",
  timeout: (detail) => `the job did not finish within ${detail}`,
  aborted: () => "the wait for the job was aborted by its signal; the job itself goes on",
  notFound: () =>
    "no row has this id, and none was seen under it: it was never published, or it was handled and deleted (or cancelled) before the first look; a table without a processedAt column cannot tell these apart",
};

/**
 * `job.finished()` rejected: `reason` says why, `last` is the job's state as last read (`undefined`
 * when none was read). Code `JobEnded`.
 *
 * @example
 * try { await job.finished({ timeoutMs: 60_000 }) }
 * catch (error) { if (error instanceof JobEnded && error.reason === "deadLettered") showFailure(error.lastError) }
 */
export class JobEnded<State = unknown> extends SqlInboxError {
  readonly reason: JobEndReason;
  /** The state last read before the wait ended. */
  readonly last: State | undefined;
  /** A dead letter's last error, where its table records one. */
  readonly lastError: string | null;

  /** `detail`: a dead letter's last error (`: …`), or the timeout's length. */
  constructor(reason: JobEndReason, place: ErrorPlace, options: { readonly last?: State; readonly lastError?: string | null; readonly timeoutMs?: number } = {}) {
    const detail = reason === "timeout" ? `${options.timeoutMs ?? 0} ms` : options.lastError ? `: ${options.lastError}` : "";
    super("JobEnded", SAYS[reason](detail), place);
    this.reason = reason;
    this.last = options.last;
    this.lastError = options.lastError ?? null;
  }
}

/** `broker.job(…, { deadLetter })` (or `broker.jobs`) names a table that generates its own ids: its rows cannot be found by the job's id. */
export function deadLetterIdGenerated(route: string, table: string, call: "broker.job" | "broker.jobs" = "broker.job"): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `${call}(…, { deadLetter }): the dead-letter table "${table}" generates its own ids, so a dead letter keeps no trace of the job's id; describe its id column without .generated() to follow jobs into it`,
    { route },
  );
}

/** `list({ limit })` is not a whole number from 1 to `max`. */
export function badListLimit(limit: unknown, max: number, route: string): SqlInboxError {
  return new SqlInboxError("Declaration", `jobs(…).list({ limit }) must be a whole number from 1 to ${max}, got ${String(limit)}: ask for the rest with the page's next cursor`, {
    route,
  });
}

/** `list({ after })` is not a cursor a page of this state gave. */
export function badListCursor(after: unknown, state: string, route: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `jobs(…).list({ after }) is not a cursor of a "${state}" page: pass the \`next\` of the page before, unchanged, with the same state (got ${JSON.stringify(after)})`,
    { route },
  );
}

/** `list(…)` asks for what the route's table has no column for (`key`, `columns`, `done`) or names an unknown state. */
export function badListQuery(message: string, route: string, table: string, column?: string): SqlInboxError {
  return new SqlInboxError("Declaration", message, { route, table, ...(column !== undefined ? { column } : {}) });
}
