import type { HandlerOutcome, RetryAfterOutcome } from "./outcome.js";

/** What a failure policy knows besides the error and the attempt. */
export interface FailureContext {
  readonly subscription: string;
  readonly table: string;
  readonly id: unknown;
  /** The queue declared a dead-letter destination (`InboxQueue.deadLetter`). */
  readonly deadLetter: boolean;
  /** The queue's `maxAttempts`, when declared with the dead letter. */
  readonly maxAttempts: number | undefined;
  /** How long the default decode policy keeps an undecodable row out of claims (the lease term). */
  readonly keepMs: number;
}

/**
 * A pure function from a failure to an outcome: `.onError(…)` for a handler that threw,
 * `.onDecodeError(…)` for a payload that cannot be decoded or fails its schema. `attempt` is the
 * delivery's attempt (`undefined` on a table without an attempt column).
 */
export type FailurePolicy<O extends HandlerOutcome = HandlerOutcome> = (error: unknown, attempt: number | undefined, ctx: FailureContext) => O;

/** Exponential backoff with full jitter: a delay drawn from `[0, min(capMs, baseMs · factor^(attempt-1))]`. */
export interface Backoff {
  readonly baseMs: number;
  readonly factor: number;
  readonly capMs: number;
}

/** The default backoff: base 1 s, doubling, capped at 1 h. */
export const DEFAULT_BACKOFF: Backoff = Object.freeze({ baseMs: 1000, factor: 2, capMs: 3_600_000 });

/** The ceiling of the delay after `attempt` (1 or less: the base). */
export function backoffCeiling(attempt: number | undefined, backoff: Backoff = DEFAULT_BACKOFF): number {
  const n = Math.max(1, attempt ?? 1);
  // Capped before the power overflows: 2^60 · 1 s is far past any cap.
  return Math.min(backoff.capMs, backoff.baseMs * backoff.factor ** Math.min(n - 1, 60));
}

/** A delay with full jitter; `random` in [0, 1) (injected so the tables can test it). */
export function backoffMs(attempt: number | undefined, backoff: Backoff = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  return Math.floor(random() * backoffCeiling(attempt, backoff));
}

/** The message a dead-letter move records for an error. */
export function reasonOf(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/**
 * The default for a handler that threw: the dead letter once `attempt` reached `maxAttempts`,
 * otherwise back after an exponential backoff with full jitter.
 */
export function defaultOnError(backoff: Backoff = DEFAULT_BACKOFF, random: () => number = Math.random): FailurePolicy {
  return (error, attempt, ctx) => {
    if (ctx.deadLetter && ctx.maxAttempts !== undefined && attempt !== undefined && attempt >= ctx.maxAttempts) {
      return { kind: "deadLetter", reason: reasonOf(error) };
    }
    return { kind: "retryAfter", ms: backoffMs(attempt, backoff, random) } satisfies RetryAfterOutcome;
  };
}

/**
 * The default for a payload that cannot be decoded: the dead letter where one is declared,
 * otherwise the row is kept (and logged) and stays out of claims for `keepMs`.
 */
export const defaultOnDecodeError: FailurePolicy = (error, _attempt, ctx) =>
  ctx.deadLetter ? { kind: "deadLetter", reason: reasonOf(error) } : { kind: "retryAfter", ms: ctx.keepMs };
