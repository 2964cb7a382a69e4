import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";

/** A queue's options and its handler's context: modes, caps and rate limits, dead letters, timeouts, context keys. */

// Modes, caps and rate limits.

export function refusedModes(subscription: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "transactional() and sharedTransaction() exclude each other: a handler's writes cannot roll back alone inside a transaction other rows share",
    { subscription },
  );
}

export function badFlowLimit(what: string, expected: string, got: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", `${what} must be ${expected}, got ${String(got)}`, place);
}

export function capNeedsRetryAfter(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    'maxInWork on a lease table needs a retryAfter column: the cap counts rows whose lease is ahead, and without one a delayed row waits in its lease column and counts as in work; describe one with field.retryAfter() or .retryAfter(column("retry_after"))',
    place,
  );
}

export function sharedNeedsRowLock(subscription: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "sharedTransaction() needs a row-lock table (no lease column, no advisory key): the lease and advisory forms settle each row on its own",
    { subscription, table },
  );
}

export function perKeyNeedsKey(subscription: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "maxInWorkPerKey needs an order key or a group column: describe one with field.orderKey(…) or .orderKey(column(…)); without one there is no key to count rows by",
    { subscription, table },
  );
}

export function perKeyOnAdvisory(subscription: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "maxInWorkPerKey needs a lease or row-lock table: an advisory key already runs the rows that share it one at a time, so drop maxInWorkPerKey or describe a lease column instead of the advisory key",
    { subscription, table },
  );
}

export function transactionalBatchRefused(subscription: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "a batch handler cannot be transactional: its rows have one outcome each, its writes one transaction; write through a per-row transactional handler, or settle the batch by its outcomes",
    { subscription },
  );
}

// Dead letters.

export function maxAttemptsNeedsAttempt(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", 'maxAttempts needs an attempt column: describe one with .attempt(column("attempt")) or field.attempt()', place);
}

export function deadLetterNeedsGroup(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", "a dead-letter group needs a group column on the table: describe one, or give a destination table", place);
}

export function deadLetterGroupIsSource(group: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", `the dead-letter group "${group}" is this queue's own group: name another one`, place);
}

// Timeouts.

/** `.timeout(ms, { graceMs })` with a value that is not a duration. */
export function badTimeout(what: "ms" | "graceMs", value: unknown, place: ErrorPlace): SqlInboxError {
  const must = what === "ms" ? "a positive whole number of ms" : "a whole number of ms, 0 or more";
  return new SqlInboxError("Declaration", `timeout ${what} must be ${must}, got ${String(value)}`, place);
}

// The handler's context.

export function notTransactional(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", "ctx.tx exists only on a transactional queue: declare it with .transactional()", place);
}

export function unknownContextKey(key: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", `unknown context key "${key}"`, place);
}

export function retainNeedsProcessedAt(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "retain({ done }) needs a processedAt column: this table's ack deletes the row, so no handled row is kept to prune; describe one with field.processedAt(), or drop done",
    place,
  );
}

export function retainNeedsDeadLetterTable(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "retain({ deadLettered }) needs a dead-letter table: declare one with .deadLetter(DeadTable), or drop deadLettered (dead letters in a group of this table are rows of this table, not pruned by it)",
    place,
  );
}

export function retainNeedsDeadLetterTime(deadTable: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `retain({ deadLettered }) needs a processedAt column on the dead-letter table "${deadTable}": a move there stamps it with the time the row was dead-lettered, which the window counts from; describe one with field.processedAt() (or .processedAt(column("dead_at"))), or drop deadLettered`,
    place,
  );
}
