import type { ErrorPlace, InboxDescription } from "@sqlinbox/core/internal";
import { badFlowLimit, retainNeedsDeadLetterTable, retainNeedsDeadLetterTime, retainNeedsProcessedAt } from "../errors.js";
import type { FailurePolicy } from "./failure-policy.js";

// What a queue's options hold once declared (`InboxQueue`'s setters build them), and the checks of their values.

/** Where a queue's dead letters go: another table (a new row there), or another group of the same table. */
export type DeadLetterTarget = { readonly table: InboxDescription } | { readonly group: string };

/** A queue's dead letter, declared with its `maxAttempts`. */
export interface DeadLetterDeclaration {
  readonly target: DeadLetterTarget;
  readonly maxAttempts?: number;
}

/** A queue's handler timeout (`InboxQueue.timeout`): how long a delivery may run, and the grace after it. */
export interface HandlerTimeout {
  /** After this many ms in the handler, `ctx.signal` aborts with a `Timeout`. */
  readonly ms: number;
  /** After the abort, how long the handler has to end before its row is released without it. */
  readonly graceMs: number;
}

/** The grace a timeout gets unless one is given: half the timeout, at most 30 s. */
export function defaultTimeoutGrace(ms: number): number {
  return Math.min(Math.ceil(ms / 2), 30_000);
}

/** The options one subscription runs with. */
export interface QueueOptions {
  /** The lease term in ms (whole seconds); unset: the broker's lease. */
  readonly lease?: number;
  readonly pollInterval: number;
  readonly workers: number;
  readonly batch: number;
  /** Handlers write through `ctx.tx`, committed with an ack (`.transactional()`). */
  readonly transactional?: boolean;
  /** Row lock: the rows of one claim share one transaction (`.sharedTransaction()`). */
  readonly sharedTransaction?: boolean;
  /** Where dead letters go, and after how many attempts a throw goes there. */
  readonly deadLetter?: DeadLetterDeclaration;
  /** What a handler's throw becomes; unset: `defaultOnError()`. */
  readonly onError?: FailurePolicy;
  /** What an undecodable payload becomes; unset: `defaultOnDecodeError`. */
  readonly onDecodeError?: FailurePolicy;
  /** How long a delivery may run (`.timeout(ms)`); unset: as long as it takes. */
  readonly timeout?: HandlerTimeout;
  /** Rows of one order key (or of the group) in work at once, across every process (`.maxInWorkPerKey(n)`); unset: 1 with an order key. */
  readonly maxInWorkPerKey?: number;
  /** At most this many rows of the subscription in work at once, across every process (`.maxInWork(n)`). */
  readonly maxInWork?: number;
  /** At most `max` deliveries start in any window of `perMs`, across every process (`.rateLimit(…)`). */
  readonly rateLimit?: RateLimit;
  /** How long handled rows and dead letters are kept (`.retain(…)`); unset: for ever. */
  readonly retain?: Retention;
}

/** How long a queue keeps what it handled (`InboxQueue.retain`), in ms; a window left out keeps those rows for ever. */
export interface Retention {
  /** Handled rows (processedAt set) are deleted once they were handled this long ago. */
  readonly done?: number;
  /** Rows in the dead-letter table are deleted once they were dead-lettered this long ago (its processedAt column). */
  readonly deadLettered?: number;
}

/**
 * The retention windows' checks against the table and the dead letter declared so far: each window
 * a positive duration, `done` on a table that keeps handled rows, `deadLettered` into a dead-letter table
 * that records when (its processedAt column). `deadLettered` before any dead letter is declared is
 * checked again when the app starts (`refusals.ts`), so the two may be declared in either order.
 */
export function checkRetention(retain: Retention, spec: InboxDescription, deadLetter: DeadLetterDeclaration | undefined, place: ErrorPlace): void {
  for (const what of ["done", "deadLettered"] as const) {
    const ms = retain[what];
    if (ms !== undefined && (typeof ms !== "number" || !Number.isFinite(ms) || ms <= 0)) throw badFlowLimit(`retain's ${what}`, "a window above 0 ms", ms, place);
  }
  if (retain.done !== undefined && spec.processedAt === undefined) throw retainNeedsProcessedAt(place);
  if (retain.deadLettered === undefined || deadLetter === undefined) return;
  const target = deadLetter.target;
  if (!("table" in target)) throw retainNeedsDeadLetterTable(place);
  if (target.table.processedAt === undefined) throw retainNeedsDeadLetterTime(target.table.table, place);
}

/** A rate limit: at most `max` deliveries start in any window of `perMs` milliseconds, across every process. */
export interface RateLimit {
  readonly max: number;
  readonly perMs: number;
}

/** Rounds a lease up to whole seconds (at least one). */
export function wholeSeconds(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`a lease is a positive duration in ms, got ${ms}`);
  return Math.max(1, Math.ceil(ms / 1000)) * 1000;
}

export function positiveWhole(what: string, n: number, place: ErrorPlace): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1) throw badFlowLimit(what, "a whole number above 0", n, place);
  return n;
}

export function positiveInteger(what: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be a positive integer, got ${n}`);
  return n;
}
