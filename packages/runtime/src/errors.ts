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
    table === undefined ? { route: name } : { route: name, table },
  );
}

export function noRouteInApp(route: string): SqlInboxError {
  return new SqlInboxError("NoRoute", `no broker of this app declares route "${route}"`, { route });
}

export function routeOnOtherTable(name: string, routeTable: string, queueTable: string): SqlInboxError {
  return new SqlInboxError("Declaration", `route "${name}" is on table "${routeTable}", the subscriber's queue on "${queueTable}"`, { subscription: name });
}

export function routeAlreadyDeclared(name: string, knownTable: string, table: string): SqlInboxError {
  return new SqlInboxError("Declaration", `route "${name}" is already declared on table "${knownTable}"`, { route: name, table });
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

export function refusedModes(subscription: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "transactional() and sharedTransaction() exclude each other: a handler's writes cannot roll back alone inside a transaction other rows share",
    { subscription },
  );
}

// Flow control: caps and rate limits.

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

export function slotTableMissing(table: string, cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "Schema",
    `the table ${table} does not exist (${causeMessage(cause)}): maxInWork and rateLimit count in it; create it with createInboxTable(db, spec, undefined, { slotTable: true }), inboxTableSql(spec, engine, { slotTable: true }) or sqlinbox ddl --slot-table`,
    place,
    { cause },
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

export function notTransactional(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Declaration", "ctx.tx exists only on a transactional queue: declare it with .transactional()", place);
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

/** A form that keeps a session across transactions (`holdsSessionAcrossTransactions`) through a pooler in transaction mode. */
export function formThroughTransactionPooler(form: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `the ${form} form holds its lock on a database session across transactions, and this broker goes through a pooler in transaction mode (pooler: "transaction"), which hands each transaction to any server session: give the table a lease column, or connect this broker directly or through a pooler in session mode`,
    place,
  );
}

/** A form whose exclusivity is a lock (`exclusiveByLock`) on a node of a multi-primary cluster. */
export function formOnMultiPrimaryCluster(form: string, cluster: { readonly kind: string; readonly nodes: number }, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `the ${form} form rests on a lock the server holds, and this server is a node of a ${cluster.kind} cluster (wsrep_on, ${cluster.nodes} nodes), where such a lock is the node's own until commit: a worker on another node can take the same row. Give the table a lease column (a lease is a committed write, certified across the nodes)`,
    place,
  );
}

export function listenThroughTransactionPooler(label: string): SqlInboxError {
  return new SqlInboxError(
    "UnsupportedForm",
    `listenNotify() needs LISTEN on a session of its own for the app's life, and this broker goes through a pooler in transaction mode (pooler: "transaction", ${label}), which hands each transaction to any server session: drop .listenNotify() (other processes see a publish at their next poll), or connect this broker directly or through a pooler in session mode`,
  );
}

export function listenNeedsOwnPool(label: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `listenNotify() needs a connection of its own: build the broker with SqlBroker.fromUrl, or give SqlBroker.fromKysely(db, { listen }) a pg client factory or pool; this broker is ${label}`,
  );
}

// Schedules (app.cron).

const inZone = (timeZone: string | undefined): string => (timeZone === undefined ? "" : ` in time zone "${timeZone}"`);

/** croner refused the pattern or the time zone: its reason, first line. */
export function cronPatternInvalid(pattern: string, timeZone: string | undefined, cause: unknown, route: string): SqlInboxError {
  const why = causeMessage(cause).split("\n")[0];
  return new SqlInboxError(
    "Declaration",
    `app.cron(…) cannot read the pattern "${pattern}"${inZone(timeZone)}: ${why}; give 5 fields (minute hour day month weekday), or 6 with seconds first, and an IANA time zone such as "Europe/Berlin"`,
    { route },
    { cause },
  );
}

export function cronNeverFires(pattern: string, timeZone: string | undefined, route: string): SqlInboxError {
  return new SqlInboxError("Declaration", `app.cron(…): the pattern "${pattern}"${inZone(timeZone)} never fires from now on: check its day and month fields`, { route });
}

export function cronNeedsKey(route: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "app.cron(…) needs a dedup key column on the route's table: each tick is published with the key cron:<route>:<tick time>, so that every process running the app publishes it once; describe one with field.key() or .key(column(…))",
    { route, table },
  );
}

export function cronCatchUpNeedsProcessedAt(route: string, table: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    "app.cron(…, { catchUp }) needs a processedAt column on the route's table: on a table whose ack deletes the row, a handled tick's key is free again, and every start would publish it again; describe one with field.processedAt(), or drop catchUp",
    { route, table },
  );
}

export function cronCatchUpInvalid(catchUp: number, route: string): SqlInboxError {
  return new SqlInboxError("Declaration", `app.cron(…, { catchUp: ${catchUp} }): catchUp is how many missed ticks to publish at start, a whole number from 0`, { route });
}

/** A publish option the route's table has no column for (`priority`, `runAt`/`delay`, `key`, a data column). */
export function publishOptionWithoutColumn(route: string, table: string, message: string, column?: string): SqlInboxError {
  return new SqlInboxError("Declaration", message, { subscription: route, table, ...(column !== undefined ? { column } : {}) });
}

export function headersWithoutColumn(route: string, table: string): SqlInboxError {
  return new SqlInboxError("Declaration", "a publish with headers needs a headers column: describe one with field.headers() or .headers(column(…))", {
    route,
    table,
  });
}

export function schemaUnsupported(engine: string, schema: string, table: string): SqlInboxError {
  return new SqlInboxError("UnsupportedForm", `the table is described in schema "${schema}", and ${engine} has no schemas: describe it without one`, { table });
}

/** `extending`: the Kysely adapter of a known engine that `adapter` subclasses (CockroachDB's extends Postgres'). */
export function unknownKyselyDialect(adapter: string, extending?: string): SqlInboxError {
  const named = extending === undefined ? adapter : `${adapter}, a subclass of ${extending}`;
  const also = extending === undefined ? "" : ", and never runs another engine as the one it extends";
  return new SqlInboxError("UnsupportedForm", `a Kysely instance on an unknown dialect (${named}): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite${also}`);
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

// Time.

/**
 * `leaseClock: "host"` and a host clock further from the database's than a quarter of the shortest
 * lease: both times, the skew, the lease and the two ways out.
 */
export function clockSkew(
  times: { readonly hostAt: number; readonly serverAt: number; readonly skewMs: number },
  leaseMs: number,
  database: string,
  place: ErrorPlace,
): SqlInboxError {
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const side = times.skewMs > 0 ? "ahead" : "behind";
  return new SqlInboxError(
    "ClockSkew",
    `the host's clock reads ${new Date(times.hostAt).toISOString()} and the database's (${database}) ${new Date(times.serverAt).toISOString()}: ` +
      `the host is ${seconds(Math.abs(times.skewMs))} ${side}, more than a quarter of the ${seconds(leaseMs)} lease (${seconds(leaseMs / 4)}) that leaseClock "host" tolerates: ` +
      `set the host's clock right (NTP), or leave leaseClock at "database" so that deadlines use the database's time`,
    place,
  );
}

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

/**
 * A statement failed because a table does not exist (dropped by a migration, never created). The
 * driver's words name the table; `place` names it too where the caller knows it.
 */
export function tableMissing(cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Schema", `a table does not exist (${causeMessage(cause)}): create it or restore it; nothing was written`, place, { cause });
}

/**
 * The reason `ctx.signal` aborts with when the row in work was cancelled (`broker.cancel`,
 * `sqlinbox cancel`, the dashboard): unless the handler returns an outcome, the row is dropped.
 */
export function cancelled(place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Cancelled", "the row was cancelled while in work: stop its work; unless the handler returns an outcome, the row is dropped", place);
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

export function lockSessionLost(kind: string, cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError(
    "SessionLost",
    `the ${kind} was not written: the session holding the key's lock ended (${causeMessage(cause)}); the row is back in the queue, its attempt spent`,
    place,
    { cause },
  );
}

// Timeouts.

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

/** `.timeout(ms, { graceMs })` with a value that is not a duration. */
export function badTimeout(what: "ms" | "graceMs", value: unknown, place: ErrorPlace): SqlInboxError {
  const must = what === "ms" ? "a positive whole number of ms" : "a whole number of ms, 0 or more";
  return new SqlInboxError("Declaration", `timeout ${what} must be ${must}, got ${String(value)}`, place);
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

// Connections.

/** The database could not be reached when the broker opened its pool; `label` is the URL without its password. */
export function connectFailed(label: string, routes: readonly string[], cause: unknown, place: ErrorPlace): SqlInboxError {
  const code = (cause as { code?: unknown } | null)?.code;
  const why = typeof code === "string" && !causeMessage(cause).includes(code) ? `${code}: ${causeMessage(cause)}` : causeMessage(cause);
  const serving = routes.length > 0 ? ` for route${routes.length > 1 ? "s" : ""} ${routes.map((r) => `"${r}"`).join(", ")}` : "";
  return new SqlInboxError("Connect", `cannot connect to ${label}${serving}: ${why}`, place, { cause });
}

export function failsSchema(issues: string, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Decode", `the payload fails its schema: ${issues}`, place);
}

export function notUtf8Json(cause: unknown, place: ErrorPlace): SqlInboxError {
  return new SqlInboxError("Decode", `the payload is not UTF-8 JSON: ${causeMessage(cause)}`, place, { cause });
}
