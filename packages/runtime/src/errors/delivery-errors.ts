import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";
import { causeMessage } from "./cause-message.js";

/** What a running broker and its deliveries meet: a closed broker, a settlement that cannot be written, a missing table, a cancel or a timeout, a payload that cannot be read or written. */

// Broker lifecycle.

export function brokerStopped(): SqlInboxError {
  return new SqlInboxError("Closed", "this broker was stopped; build a new one to start again");
}

export function brokerNotStarted(route?: string): SqlInboxError {
  return new SqlInboxError("Closed", "the broker has not started: start the app that routes it first", route ? { route } : {});
}

export function closedBeforePublish(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Closed", "the broker is closed: nothing was published", place);
}

export function closed(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Closed", "the broker is closed", place);
}

// Settlements.

export function alreadySettled(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", "this delivery was already settled", place);
}

/** A lease settlement after the broker closed: nothing written, the lease runs out. */
export function closedBeforeLeaseSettlement(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Closed", "the broker is closed: the settlement was not written; the row returns when its lease expires", place);
}

/** What a held delivery holds: its row's transaction (row lock) or its key's lock (advisory). */
export type HeldThing = "row" | "key";

/** A held delivery's settlement after the broker closed (or the delivery was abandoned): the hold is given back. */
export function closedBeforeHeldSettlement(kind: string, held: HeldThing, place: ErrorPlace): SqlInboxError {
  const givenBack =
    held === "row" ? "the claim was rolled back and the row is back in the queue, its attempt not spent" : "the key's lock was released and the row is back in the queue";
  return new SqlInboxError("Closed", `the broker is closed: the ${kind} was not written; ${givenBack}`, place);
}

/** A lease-form settlement whose token the row no longer carries: nothing was written. */
export function leaseNotHeld(kind: string, held: Date, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("LeaseLost", `the ${kind} was not written: the row no longer holds this delivery's lease (${held.toISOString()})`, place);
}

export function leaseLost(why: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("LeaseLost", `the lease was lost: ${why}`, place);
}

export function batchedAckShort(written: number, locked: number, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("LeaseLost", `a batched ack wrote ${written} of ${locked} locked rows; the transaction was rolled back`, place);
}

export function transactionLost(kind: string, attempt: number | undefined, cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "SessionLost",
    `the ${kind} was not written: the delivery's transaction ended under it (${causeMessage(cause)}); it was rolled back, so the row is back in the queue with its attempt (${attempt ?? "none"}) not spent`,
    place,
    { cause },
  );
}

export function batchRolledBack(kind: string, rows: number, cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "BatchRolledBack",
    `the ${kind} was not written: the transaction the row shared with ${rows - 1} other row(s) failed to commit (${causeMessage(cause)}); every row of it is back in the queue, its attempt not spent`,
    place,
    { cause },
  );
}

export function settlementDeadlockedTooOften(kind: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("SessionLost", `the ${kind} deadlocked too often; the row is back in the queue`, place);
}

export function lockSessionLost(kind: string, cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "SessionLost",
    `the ${kind} was not written: the session holding the key's lock ended (${causeMessage(cause)}); the row is back in the queue, its attempt spent`,
    place,
    { cause },
  );
}

export function batchOutcomesMismatch(returned: number, rows: number, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Handler", `a batch handler returned ${returned} outcomes for ${rows} rows: return one outcome per row, in order, or one for all`, place);
}

/**
 * A `retryAfter` that reached the runtime untyped (the compiler refuses it) on a table with no
 * column for a time: the row is released at once and left out of this process's claims meanwhile.
 */
export function delayWithoutColumn(ms: number, table: string, source: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `${source} returned retryAfter(${ms}) on ${table} with nowhere to store a time: add a retryAfter column (field.retryAfter(), or .retryAfter(column("retry_after"))), or return retry(); the row was released at once and this process leaves it out of its claims for the delay, other processes may take it sooner`,
    place,
  );
}

export function noDeadLetter(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", "deadLetter() on a queue with no dead-letter destination: declare one with InboxQueue.deadLetter(…); the row is kept", place);
}

// Tables.

/**
 * A statement failed because a table does not exist (dropped by a migration, never created). The
 * driver's words name the table; `place` names it too where the caller knows it.
 */
export function tableMissing(cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Schema",
    `a table does not exist (${causeMessage(cause)}): create it or restore it (a queue table: createInboxTable(db, spec) at startup, or the statements sqlinbox ddl prints); nothing was written`,
    place,
    { cause },
  );
}

export function slotTableMissing(table: string, cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Schema",
    `the table ${table} does not exist (${causeMessage(cause)}): maxInWork and rateLimit count in it; create it with createInboxTable(db, spec, undefined, { slotTable: true }), inboxTableSql(spec, engine, { slotTable: true }) or sqlinbox ddl --slot-table`,
    place,
    { cause },
  );
}

/** Pause, resume or cancel on a database without the control table. */
export function controlTableMissing(table: string, cause: unknown): SqlInboxError {
  return new SqlInboxError(
    "Schema",
    `pause, resume and cancel need the control table "${table}": create it with createControlTable(db), or run the statements of controlTableSql(engine) (sqlinbox ddl --control)`,
    { table },
    { cause },
  );
}

// Cancels and timeouts.

/**
 * The reason `ctx.signal` aborts with when the row in work was cancelled (`broker.cancel`,
 * `sqlinbox cancel`, the dashboard): unless the handler returns an outcome, the row is dropped.
 */
export function cancelled(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Cancelled", "the row was cancelled while in work: stop its work; unless the handler returns an outcome, the row is dropped", place);
}

/**
 * The reason `ctx.signal` aborts with when a delivery runs longer than its queue's
 * `.timeout(ms)`, and the error the queue's `onError` policy receives for it.
 *
 * @example
 * .onError((error, attempt) => (error instanceof Timeout ? HandlerOutcome.deadLetter(error.message) : HandlerOutcome.retry()))
 */
export class Timeout extends SqlInboxError {
  /** The queue's timeout, in ms. */
  readonly ms: number;

  constructor(ms: number, place: ErrorPlace) {
    super("Timeout", `the delivery ran longer than its timeout of ${ms} ms: ctx.signal aborted, and the row settles by the queue's onError policy`, place);
    this.ms = ms;
  }
}

/** A statement through `ctx.tx` after the timeout's grace ended the handler's transaction: refused, never sent. */
export function afterTimeoutGrace(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Timeout",
    "a statement through ctx.tx after the timeout's grace period: the handler's transaction was ended and the row released, so the statement was not run",
    place,
  );
}

// Payloads.

export function notSerializable(payload: unknown, place: ErrorPlace = {}): SqlInboxError {
  return new SqlInboxError("Encode", `a payload must be JSON-serializable, got ${typeof payload}; no row was written`, place);
}

/** `JSON.stringify` refused the payload (a BigInt, a cycle): nothing was written. */
export function notEncodable(cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Encode", `the payload cannot be written as JSON (${causeMessage(cause).split("\n")[0]}); no row was written`, place, { cause });
}

/**
 * A publish failed after its statement (or its commit) may have reached the server: the connection was
 * lost on its way, or an earlier statement of the same publish had committed. Its rows may or may not
 * exist; any other publish failure wrote nothing.
 */
export function publishOutcomeUnknown(rows: number, keyed: boolean, cause: unknown, place: ErrorPlace): SqlInboxError {
  const what = rows === 1 ? "its row may or may not have been written" : `some or all of its ${rows} rows may have been written`;
  const advice = keyed
    ? "publishing again with the same keys is safe while a written row is still in the table (it answers created: false)"
    : "publishing again may make a second job: publish with a key to retry safely, or look for the row first";
  return new SqlInboxError("OutcomeUnknown", `the publish failed after it reached the database (${causeMessage(cause)}): ${what}; ${advice}`, place, { cause });
}

export function failsSchema(issues: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Decode", `the payload fails its schema: ${issues}`, place);
}

export function notUtf8Json(cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Decode", `the payload is not UTF-8 JSON: ${causeMessage(cause)}`, place, { cause });
}

/** `ctx.progress` on a form that cannot show it: the row-lock claim holds the row in an open transaction, so no other session would see the write before the settlement. */
export function progressNotShown(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    "progress cannot be shown on a row-lock table: the claim holds the row in an open transaction, so no other session sees a write before the settlement commits; use a lease column or an advisory key",
    place,
  );
}
