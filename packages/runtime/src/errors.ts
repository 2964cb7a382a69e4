import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core/internal";

/**
 * Every `SqlInboxError` the runtime throws, one constructor per message, so a message is typed
 * once and `test/errors.test.ts` pins each text. `kind` is the outcome being settled (`ack`, `retry`, …).
 */

type Routes = ReadonlyMap<string, unknown>;

const causeMessage = (cause: unknown): string => (cause as Error).message;

// Routes and declarations.

export function noRoute(name: string, routes: Routes, table?: string): SqlInboxError {
  const known = [...routes.keys()].map((n) => `"${n}"`).join(", ") || "none";
  return new SqlInboxError(
    "NoRoute",
    `no route named "${name}" (declared: ${known}): declare it with broker.route(spec, "${name}")`,
    table === undefined ? { subscription: name } : { subscription: name, table },
  );
}

export function noRouteInApp(route: string): SqlInboxError {
  return new SqlInboxError("NoRoute", `no broker of this app declares route "${route}"`, { subscription: route });
}

export function routeOnOtherTable(name: string, routeTable: string, queueTable: string): SqlInboxError {
  return new SqlInboxError("Declaration", `route "${name}" is on table "${routeTable}", the subscriber's queue on "${queueTable}"`, { subscription: name });
}

export function routeAlreadyDeclared(name: string, knownTable: string, table: string): SqlInboxError {
  return new SqlInboxError("Declaration", `route "${name}" is already declared on table "${knownTable}"`, { subscription: name, table });
}

export function routeSubscribedTwice(name: string): SqlInboxError {
  return new SqlInboxError("AlreadySubscribed", "a route has one subscriber per app", { subscription: name });
}

export function queueSubscribedTwice(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "AlreadySubscribed",
    "this queue already has a subscriber on this broker (in this or another running app): one subscriber per queue, raise its workers instead",
    place,
  );
}

export function unknownContextKey(key: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", `unknown context key "${key}"`, place);
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

export function noDeadLetter(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", "deadLetter() on a queue with no dead-letter destination: declare one with InboxQueue.deadLetter(…); the row is kept", place);
}

// Engines, forms and URLs.

/** A row-lock table on an engine without row locks, refused before anything connects. */
export function rowLockTableUnsupported(engine: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `a row-lock table on ${engine}, which has no row locks: give the table a lease column (.lease(column("locked_until"))) or an advisory key (.advisoryLock("…"))`,
    place,
  );
}

/** The row-lock claim built on a dialect without row-lock statements. */
export function noRowLocks(engine: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("UnsupportedForm", `${engine} has no row locks: give the table a lease column or an advisory key`, place);
}

export function listenNeedsPostgres(engine: string, label: string): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `listenNotify() needs Postgres (LISTEN/NOTIFY), and this broker is on ${engine} (${label}): drop .listenNotify(); other processes see a publish at their next poll`,
  );
}

export function listenNeedsOwnPool(label: string): SqlInboxError {
  return new SqlInboxError("Declaration", `listenNotify() needs a Postgres broker built with SqlBroker.fromUrl, whose pool it takes a connection from; this broker is ${label}`);
}

export function unknownKyselyDialect(adapter: string): SqlInboxError {
  return new SqlInboxError("UnsupportedForm", `a Kysely instance on an unknown dialect (${adapter}): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite`);
}

export function sqliteUrlWithoutFile(): SqlInboxError {
  return new SqlInboxError("Declaration", "the SQLite URL names no file: use sqlite::memory: or sqlite:path/to/file.db");
}

export function unsupportedUrlScheme(scheme: string): SqlInboxError {
  return new SqlInboxError("Declaration", `unsupported database URL scheme "${scheme}": use postgres://, mysql://, mariadb://, sqlite::memory: or sqlite:path`);
}

/** One subscription's share of the pool, as the `PoolTooSmall` message shows it. */
export interface PoolShare {
  readonly name: string;
  readonly form: string;
  readonly workers: number;
  readonly perDelivery: number;
  readonly total: number;
}

export function poolTooSmall(poolMax: number, shares: readonly PoolShare[], listenNotify: boolean, total: number): SqlInboxError {
  const arithmetic = [
    ...shares.map(
      (p) => `"${p.name}" (${p.form}, workers(${p.workers})): ${p.workers} x ${p.perDelivery} for deliveries in work + 1 for handlers, publishes and settlements = ${p.total}`,
    ),
    ...(listenNotify ? ["1 for listenNotify"] : []),
  ].join("; ");
  return new SqlInboxError(
    "PoolTooSmall",
    `the pool holds at most ${poolMax} connections, the subscriptions${listenNotify ? " and listenNotify" : ""} need ${total}: ${arithmetic}; total ${total} > pool max ${poolMax}: raise pool.max to ${total} or lower workers`,
  );
}

// Broker lifecycle.

export function brokerStopped(): SqlInboxError {
  return new SqlInboxError("Closed", "this broker was stopped; build a new one to start again");
}

export function brokerNotStarted(subscription?: string): SqlInboxError {
  return new SqlInboxError("Closed", "the broker has not started: start the app that routes it first", subscription ? { subscription } : {});
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

/** The app stopped during a `retryAfter` hold (no retryAfter column): the hold is given back. */
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

// Payloads.

export function notSerializable(payload: unknown): SqlInboxError {
  return new SqlInboxError("Decode", `a payload must be JSON-serializable, got ${typeof payload}`);
}

export function failsSchema(issues: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Decode", `the payload fails its schema: ${issues}`, place);
}

export function notUtf8Json(cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Decode", `the payload is not UTF-8 JSON: ${causeMessage(cause)}`, place, { cause });
}
