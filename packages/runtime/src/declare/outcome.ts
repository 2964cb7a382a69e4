/** A handler's outcome that finishes the row successfully: deleted, or marked processed. */
export interface AckOutcome {
  readonly kind: "ack";
  /** The handler's result as JSON text, written with the ack (`ctx.ack(result)`); absent for a plain ack. */
  readonly result?: string;
}
/** Back in the queue at once; the attempt is counted at the next claim. */
export interface RetryOutcome {
  readonly kind: "retry";
}
/** Finished without success: deleted like an ack, with a warning. */
export interface DropOutcome {
  readonly kind: "drop";
}
/** Back in the queue after `ms`, stored in a column (retryAfter, or the lease column). */
export interface RetryAfterOutcome {
  readonly kind: "retryAfter";
  readonly ms: number;
}
/**
 * Back in the queue after `ms` with its attempt not spent: the count the claim made is given back in
 * the same statement that releases the row. Not a failure: `maxAttempts` never caps it.
 */
export interface SnoozeOutcome {
  readonly kind: "snooze";
  readonly ms: number;
}
/** Moved to the queue's dead-letter destination, with `reason` as its last error. */
export interface DeadLetterOutcome {
  readonly kind: "deadLetter";
  readonly reason?: string;
}

/** What a handler (or a failure policy) decided about its delivery. */
export type HandlerOutcome = AckOutcome | RetryOutcome | DropOutcome | RetryAfterOutcome | SnoozeOutcome | DeadLetterOutcome;

const ack: AckOutcome = Object.freeze({ kind: "ack" });
const retry: RetryOutcome = Object.freeze({ kind: "retry" });
const drop: DropOutcome = Object.freeze({ kind: "drop" });
const deadLetter: DeadLetterOutcome = Object.freeze({ kind: "deadLetter" });

/**
 * The outcomes a handler returns. Returning nothing means `ack()`; throwing is a failure,
 * which the queue's `onError` policy turns into an outcome (by default a backoff, then the dead letter).
 *
 * - `ack()`: done; the row is deleted (or marked, with a processedAt column). To write a result with
 *   the ack, return `ctx.ack(result)` (typed by the table's result column).
 * - `drop()`: finished without success; the row is deleted like an ack, and a warning is logged.
 * - `retry()`: back in the queue at once; the attempt is counted at the next claim.
 * - `retryAfter(ms)`: back in the queue after `ms`, written to the retryAfter column, or the lease column in the
 *   lease form; on a row-lock or advisory table without a retryAfter column it does not compile (nowhere to store a time).
 * - `snooze(ms)`: back in the queue after `ms`, stored like `retryAfter`'s delay, with the attempt not spent (the
 *   claim's count is given back in the same fenced statement), so `maxAttempts` never caps it: for a handler that
 *   waits for something outside (a payment to settle, a file to appear). Refused at compile time where `retryAfter` is.
 * - `deadLetter(reason?)`: moved to the queue's dead-letter destination (`InboxQueue.deadLetter`).
 */
export const HandlerOutcome = Object.freeze({
  ack: (): AckOutcome => ack,
  retry: (): RetryOutcome => retry,
  drop: (): DropOutcome => drop,
  retryAfter: (ms: number): RetryAfterOutcome => {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`retryAfter needs a duration in ms >= 0, got ${ms}`);
    return Object.freeze({ kind: "retryAfter", ms });
  },
  snooze: (ms: number): SnoozeOutcome => {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`snooze needs a duration in ms >= 0, got ${ms}`);
    return Object.freeze({ kind: "snooze", ms });
  },
  deadLetter: (reason?: string): DeadLetterOutcome => (reason === undefined ? deadLetter : Object.freeze({ kind: "deadLetter", reason: String(reason) })),
});

const KINDS: ReadonlySet<unknown> = new Set(["ack", "retry", "drop", "retryAfter", "snooze", "deadLetter"]);

/** Reads what a handler returned: `undefined` is an ack. */
export function toOutcome(value: unknown): HandlerOutcome {
  if (value === undefined || value === null) return ack;
  if (typeof value === "object" && "kind" in value && KINDS.has((value as { kind: unknown }).kind)) return value as HandlerOutcome;
  throw new TypeError(`a handler returned ${JSON.stringify(value)}: return a HandlerOutcome (ack, retry, drop, retryAfter, snooze, deadLetter) or nothing`);
}
