/** Every message the runtime throws, pinned: a change to one is a change a user sees. */
import { describe, expect, it } from "vitest";
import type { SqlInboxError } from "@sqlinbox/core";
import * as errors from "../src/errors.js";

const place = { subscription: "reports", table: "report_jobs", id: 7 };
const at = ' (subscription "reports", table "report_jobs", id 7)';
const held = new Date("2026-01-02T03:04:05.000Z");
const routes = new Map<string, unknown>([
  ["reports", {}],
  ["mail", {}],
]);

const cases: ReadonlyArray<readonly [keyof typeof errors, SqlInboxError, string, string]> = [
  ["noRoute", errors.noRoute("report", routes), "NoRoute", 'no route named "report" (declared: "reports", "mail"): declare it with broker.route(spec, "report") (route "report")'],
  [
    "noRoute",
    errors.noRoute("report", new Map(), "report_jobs"),
    "NoRoute",
    'no route named "report" (declared: none): declare it with broker.route(spec, "report") (route "report", table "report_jobs")',
  ],
  ["noRouteInApp", errors.noRouteInApp("mail"), "NoRoute", 'no broker of this app declares route "mail" (route "mail")'],
  ["routeOnOtherTable", errors.routeOnOtherTable("reports", "a", "b"), "Declaration", 'route "reports" is on table "a", the subscriber\'s queue on "b" (subscription "reports")'],
  ["routeAlreadyDeclared", errors.routeAlreadyDeclared("reports", "a", "b"), "Declaration", 'route "reports" is already declared on table "a" (route "reports", table "b")'],
  ["routeSubscribedTwice", errors.routeSubscribedTwice("reports"), "AlreadySubscribed", 'a route has one subscriber per app (subscription "reports")'],
  [
    "queueSubscribedTwice",
    errors.queueSubscribedTwice(place),
    "AlreadySubscribed",
    `this queue already has a subscriber on this broker (in this or another running app): one subscriber per queue, raise its workers instead${at}`,
  ],
  ["unknownContextKey", errors.unknownContextKey("colour", place), "Declaration", `unknown context key "colour"${at}`],
  [
    "rowLockTableUnsupported",
    errors.rowLockTableUnsupported("sqlite", place),
    "UnsupportedForm",
    `a row-lock table on sqlite, which has no row locks: give the table a lease column (.lease(column("locked_until"))) or an advisory key (.advisoryLock("…"))${at}`,
  ],
  ["noRowLocks", errors.noRowLocks("sqlite", place), "UnsupportedForm", `sqlite has no row locks: give the table a lease column or an advisory key${at}`],
  [
    "listenNeedsPostgres",
    errors.listenNeedsPostgres("mysql", "mysql://root@db/x"),
    "UnsupportedForm",
    "listenNotify() needs Postgres (LISTEN/NOTIFY), and this broker is on mysql (mysql://root@db/x): drop .listenNotify(); other processes see a publish at their next poll",
  ],
  [
    "formThroughTransactionPooler",
    errors.formThroughTransactionPooler("advisory", place),
    "UnsupportedForm",
    `the advisory form holds its lock on a database session across transactions, and this broker goes through a pooler in transaction mode (pooler: "transaction"), which hands each transaction to any server session: give the table a lease column, or connect this broker directly or through a pooler in session mode${at}`,
  ],
  [
    "listenThroughTransactionPooler",
    errors.listenThroughTransactionPooler("postgres://app@pgbouncer:6432/jobs"),
    "UnsupportedForm",
    'listenNotify() needs LISTEN on a session of its own for the app\'s life, and this broker goes through a pooler in transaction mode (pooler: "transaction", postgres://app@pgbouncer:6432/jobs), which hands each transaction to any server session: drop .listenNotify() (other processes see a publish at their next poll), or connect this broker directly or through a pooler in session mode',
  ],
  [
    "formOnMultiPrimaryCluster",
    errors.formOnMultiPrimaryCluster("rowLock", { kind: "Galera", nodes: 3 }, place),
    "UnsupportedForm",
    `the rowLock form rests on a lock the server holds, and this server is a node of a Galera cluster (wsrep_on, 3 nodes), where such a lock is the node's own until commit: a worker on another node can take the same row. Give the table a lease column (a lease is a committed write, certified across the nodes)${at}`,
  ],
  [
    "listenNeedsOwnPool",
    errors.listenNeedsOwnPool("kysely (postgres)"),
    "Declaration",
    "listenNotify() needs a connection of its own: build the broker with SqlBroker.fromUrl, or give SqlBroker.fromKysely(db, { listen }) a pg client factory or pool; this broker is kysely (postgres)",
  ],
  [
    "publishOptionWithoutColumn",
    errors.publishOptionWithoutColumn("jobs", "job_rows", 'publish(…, { columns }) names "tenant", which is not a data column of the table', "tenant"),
    "Declaration",
    'publish(…, { columns }) names "tenant", which is not a data column of the table (subscription "jobs", table "job_rows", column "tenant")',
  ],
  [
    "headersWithoutColumn",
    errors.headersWithoutColumn("jobs", "job_rows"),
    "Declaration",
    'a publish with headers needs a headers column: describe one with field.headers() or .headers(column(…)) (route "jobs", table "job_rows")',
  ],
  [
    "schemaUnsupported",
    errors.schemaUnsupported("sqlite", "jobs", "job_rows"),
    "UnsupportedForm",
    'the table is described in schema "jobs", and sqlite has no schemas: describe it without one (table "job_rows")',
  ],
  [
    "unknownKyselyDialect",
    errors.unknownKyselyDialect("MssqlAdapter"),
    "UnsupportedForm",
    "a Kysely instance on an unknown dialect (MssqlAdapter): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite",
  ],
  [
    "unknownKyselyDialect",
    errors.unknownKyselyDialect("CockroachAdapter", "PostgresAdapter"),
    "UnsupportedForm",
    "a Kysely instance on an unknown dialect (CockroachAdapter, a subclass of PostgresAdapter): sqlinbox runs on Postgres, MySQL/MariaDB and SQLite, and never runs another engine as the one it extends",
  ],
  [
    "poolTooSmall",
    errors.poolTooSmall(4, [{ name: "reports", form: "rowLock", workers: 4, perDelivery: 1, total: 5 }], true, 6),
    "PoolTooSmall",
    'the pool holds at most 4 connections, the subscriptions and listenNotify need 6: "reports" (rowLock, workers(4)): 4 x 1 for deliveries in work + 1 for handlers, publishes and settlements = 5; 1 for listenNotify; total 6 > pool max 4: raise pool.max to 6 or lower workers',
  ],
  [
    "poolTooSmall",
    errors.poolTooSmall(2, [{ name: "a", form: "advisory", workers: 2, perDelivery: 1, total: 3 }], false, 3),
    "PoolTooSmall",
    'the pool holds at most 2 connections, the subscriptions need 3: "a" (advisory, workers(2)): 2 x 1 for deliveries in work + 1 for handlers, publishes and settlements = 3; total 3 > pool max 2: raise pool.max to 3 or lower workers',
  ],
  [
    "clockSkew",
    errors.clockSkew({ hostAt: held.getTime() + 60_000, serverAt: held.getTime(), skewMs: 60_000 }, 30_000, "PostgreSQL 16.4 at postgres://app@db/app", place),
    "ClockSkew",
    `the host's clock reads 2026-01-02T03:05:05.000Z and the database's (PostgreSQL 16.4 at postgres://app@db/app) 2026-01-02T03:04:05.000Z: the host is 60.0 s ahead, more than a quarter of the 30.0 s lease (7.5 s) that leaseClock "host" tolerates: set the host's clock right (NTP), or leave leaseClock at "database" so that deadlines use the database's time${at}`,
  ],
  ["brokerStopped", errors.brokerStopped(), "Closed", "this broker was stopped; build a new one to start again"],
  ["brokerNotStarted", errors.brokerNotStarted("reports"), "Closed", 'the broker has not started: start the app that routes it first (route "reports")'],
  ["brokerNotStarted", errors.brokerNotStarted(), "Closed", "the broker has not started: start the app that routes it first"],
  ["closedBeforePublish", errors.closedBeforePublish(place), "Closed", `the broker is closed: nothing was published${at}`],
  ["closed", errors.closed(place), "Closed", `the broker is closed${at}`],
  ["alreadySettled", errors.alreadySettled(place), "Declaration", `this delivery was already settled${at}`],
  [
    "progressNotShown",
    errors.progressNotShown(place),
    "UnsupportedForm",
    `progress cannot be shown on a row-lock table: the claim holds the row in an open transaction, so no other session sees a write before the settlement commits; use a lease column or an advisory key${at}`,
  ],
  [
    "closedBeforeLeaseSettlement",
    errors.closedBeforeLeaseSettlement(place),
    "Closed",
    `the broker is closed: the settlement was not written; the row returns when its lease expires${at}`,
  ],
  [
    "closedBeforeHeldSettlement",
    errors.closedBeforeHeldSettlement("ack", "row", place),
    "Closed",
    `the broker is closed: the ack was not written; the claim was rolled back and the row is back in the queue, its attempt not spent${at}`,
  ],
  [
    "closedBeforeHeldSettlement",
    errors.closedBeforeHeldSettlement("retry", "key", place),
    "Closed",
    `the broker is closed: the retry was not written; the key's lock was released and the row is back in the queue${at}`,
  ],
  [
    "maxAttemptsNeedsAttempt",
    errors.maxAttemptsNeedsAttempt(place),
    "Declaration",
    `maxAttempts needs an attempt column: describe one with .attempt(column("attempt")) or field.attempt()${at}`,
  ],
  [
    "deadLetterNeedsGroup",
    errors.deadLetterNeedsGroup(place),
    "Declaration",
    `a dead-letter group needs a group column on the table: describe one, or give a destination table${at}`,
  ],
  ["deadLetterGroupIsSource", errors.deadLetterGroupIsSource("reports", place), "Declaration", `the dead-letter group "reports" is this queue's own group: name another one${at}`],
  [
    "noDeadLetter",
    errors.noDeadLetter(place),
    "Declaration",
    `deadLetter() on a queue with no dead-letter destination: declare one with InboxQueue.deadLetter(…); the row is kept${at}`,
  ],
  ["leaseNotHeld", errors.leaseNotHeld("ack", held, place), "LeaseLost", `the ack was not written: the row no longer holds this delivery's lease (2026-01-02T03:04:05.000Z)${at}`],
  ["leaseLost", errors.leaseLost("the extension found another lease", place), "LeaseLost", `the lease was lost: the extension found another lease${at}`],
  [
    "batchedAckShort",
    errors.batchedAckShort(3, 4, { subscription: "reports", table: "report_jobs" }),
    "LeaseLost",
    'a batched ack wrote 3 of 4 locked rows; the transaction was rolled back (subscription "reports", table "report_jobs")',
  ],
  [
    "transactionLost",
    errors.transactionLost("ack", 2, new Error("terminated"), place),
    "SessionLost",
    `the ack was not written: the delivery's transaction ended under it (terminated); it was rolled back, so the row is back in the queue with its attempt (2) not spent${at}`,
  ],
  [
    "transactionLost",
    errors.transactionLost("drop", undefined, new Error("gone"), place),
    "SessionLost",
    `the drop was not written: the delivery's transaction ended under it (gone); it was rolled back, so the row is back in the queue with its attempt (none) not spent${at}`,
  ],
  ["settlementDeadlockedTooOften", errors.settlementDeadlockedTooOften("ack", place), "SessionLost", `the ack deadlocked too often; the row is back in the queue${at}`],
  [
    "lockSessionLost",
    errors.lockSessionLost("retry", new Error("killed"), place),
    "SessionLost",
    `the retry was not written: the session holding the key's lock ended (killed); the row is back in the queue, its attempt spent${at}`,
  ],
  ["cancelled", errors.cancelled(place), "Cancelled", `the row was cancelled while in work: stop its work; unless the handler returns an outcome, the row is dropped${at}`],
  [
    "controlTableMissing",
    errors.controlTableMissing("sqlinbox_control", new Error("no such table")),
    "Schema",
    'pause, resume and cancel need the control table "sqlinbox_control": create it with createControlTable(db), or run the statements of controlTableSql(engine) (sqlinbox ddl --control) (table "sqlinbox_control")',
  ],
  [
    "tableMissing",
    errors.tableMissing(new Error('relation "report_jobs" does not exist'), place),
    "Schema",
    `a table does not exist (relation "report_jobs" does not exist): create it or restore it (a queue table: createInboxTable(db, spec) at startup, or the statements sqlinbox ddl prints); nothing was written${at}`,
  ],
  [
    "batchRolledBack",
    errors.batchRolledBack("ack", 4, new Error("terminated"), place),
    "BatchRolledBack",
    `the ack was not written: the transaction the row shared with 3 other row(s) failed to commit (terminated); every row of it is back in the queue, its attempt not spent${at}`,
  ],
  [
    "refusedModes",
    errors.refusedModes("reports"),
    "Declaration",
    'transactional() and sharedTransaction() exclude each other: a handler\'s writes cannot roll back alone inside a transaction other rows share (subscription "reports")',
  ],
  [
    "sharedNeedsRowLock",
    errors.sharedNeedsRowLock("reports", "report_jobs"),
    "Declaration",
    'sharedTransaction() needs a row-lock table (no lease column, no advisory key): the lease and advisory forms settle each row on its own (subscription "reports", table "report_jobs")',
  ],
  [
    "perKeyNeedsKey",
    errors.perKeyNeedsKey("ledger", "ledger_jobs"),
    "Declaration",
    'maxInWorkPerKey needs an order key or a group column: describe one with field.orderKey(…) or .orderKey(column(…)); without one there is no key to count rows by (subscription "ledger", table "ledger_jobs")',
  ],
  [
    "perKeyOnAdvisory",
    errors.perKeyOnAdvisory("ledger", "ledger_jobs"),
    "Declaration",
    'maxInWorkPerKey needs a lease or row-lock table: an advisory key already runs the rows that share it one at a time, so drop maxInWorkPerKey or describe a lease column instead of the advisory key (subscription "ledger", table "ledger_jobs")',
  ],
  [
    "badFlowLimit",
    errors.badFlowLimit("maxInWork", "a whole number above 0", 0, { subscription: "reports", table: "report_jobs" }),
    "Declaration",
    'maxInWork must be a whole number above 0, got 0 (subscription "reports", table "report_jobs")',
  ],
  [
    "capNeedsRetryAfter",
    errors.capNeedsRetryAfter({ subscription: "reports", table: "report_jobs" }),
    "Declaration",
    'maxInWork on a lease table needs a retryAfter column: the cap counts rows whose lease is ahead, and without one a delayed row waits in its lease column and counts as in work; describe one with field.retryAfter() or .retryAfter(column("retry_after")) (subscription "reports", table "report_jobs")',
  ],
  [
    "slotTableMissing",
    errors.slotTableMissing("app.sqlinbox_slots", new Error('relation "app.sqlinbox_slots" does not exist'), { subscription: "reports", table: "report_jobs" }),
    "Schema",
    'the table app.sqlinbox_slots does not exist (relation "app.sqlinbox_slots" does not exist): maxInWork and rateLimit count in it; create it with createInboxTable(db, spec, undefined, { slotTable: true }), inboxTableSql(spec, engine, { slotTable: true }) or sqlinbox ddl --slot-table (subscription "reports", table "report_jobs")',
  ],
  [
    "transactionalBatchRefused",
    errors.transactionalBatchRefused("reports"),
    "Declaration",
    'a batch handler cannot be transactional: its rows have one outcome each, its writes one transaction; write through a per-row transactional handler, or settle the batch by its outcomes (subscription "reports")',
  ],
  [
    "batchOutcomesMismatch",
    errors.batchOutcomesMismatch(3, 4, place),
    "Handler",
    `a batch handler returned 3 outcomes for 4 rows: return one outcome per row, in order, or one for all${at}`,
  ],
  [
    "delayWithoutColumn",
    errors.delayWithoutColumn(5000, "a row-lock table", "the handler", place),
    "Declaration",
    `the handler returned retryAfter(5000) on a row-lock table with nowhere to store a time: add a retryAfter column (field.retryAfter(), or .retryAfter(column("retry_after"))), or return retry(); the row was released at once and this process leaves it out of its claims for the delay, other processes may take it sooner${at}`,
  ],
  [
    "delayWithoutColumn",
    errors.delayWithoutColumn(0, "an advisory table", "the onError policy", place),
    "Declaration",
    `the onError policy returned retryAfter(0) on an advisory table with nowhere to store a time: add a retryAfter column (field.retryAfter(), or .retryAfter(column("retry_after"))), or return retry(); the row was released at once and this process leaves it out of its claims for the delay, other processes may take it sooner${at}`,
  ],
  ["notTransactional", errors.notTransactional(place), "Declaration", `ctx.tx exists only on a transactional queue: declare it with .transactional()${at}`],
  ["notSerializable", errors.notSerializable(undefined, place), "Encode", `a payload must be JSON-serializable, got undefined; no row was written${at}`],
  [
    "notEncodable",
    errors.notEncodable(new TypeError("Do not know how to serialize a BigInt"), place),
    "Encode",
    `the payload cannot be written as JSON (Do not know how to serialize a BigInt); no row was written${at}`,
  ],
  [
    "connectFailed",
    errors.connectFailed("postgres://app@db:5432/jobs", ["reports"], Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }), {
      route: "reports",
      table: "report_jobs",
    }),
    "Connect",
    'cannot connect to postgres://app@db:5432/jobs for route "reports": connect ECONNREFUSED 127.0.0.1:5432 (route "reports", table "report_jobs")',
  ],
  [
    "publishOutcomeUnknown",
    errors.publishOutcomeUnknown(1, false, new Error("Connection terminated unexpectedly"), { route: "reports", table: "report_jobs" }),
    "OutcomeUnknown",
    'the publish failed after it reached the database (Connection terminated unexpectedly): its row may or may not have been written; publishing again may make a second job: publish with a key to retry safely, or look for the row first (route "reports", table "report_jobs")',
  ],
  [
    "publishOutcomeUnknown",
    errors.publishOutcomeUnknown(3, true, new Error("Connection lost: The server closed the connection."), { route: "reports", table: "report_jobs" }),
    "OutcomeUnknown",
    'the publish failed after it reached the database (Connection lost: The server closed the connection.): some or all of its 3 rows may have been written; publishing again with the same keys is safe while a written row is still in the table (it answers created: false) (route "reports", table "report_jobs")',
  ],
  [
    "cronPatternInvalid",
    errors.cronPatternInvalid("61 * * * *", undefined, new RangeError("CronPattern: Invalid value for minute: 61\nmore"), "digest"),
    "Declaration",
    'app.cron(…) cannot read the pattern "61 * * * *": CronPattern: Invalid value for minute: 61; give 5 fields (minute hour day month weekday), or 6 with seconds first (route "digest")',
  ],
  [
    "cronTimeZoneInvalid",
    errors.cronTimeZoneInvalid("0 6 * * *", "Mars/Olympus", new RangeError("Invalid time zone specified: Mars/Olympus"), "digest"),
    "Declaration",
    'app.cron(…, { timeZone: "Mars/Olympus" }): this host knows no time zone "Mars/Olympus" (for the pattern "0 6 * * *"): give an IANA name such as "Europe/Berlin" or "America/New_York"; Intl.supportedValuesOf("timeZone") lists them (route "digest")',
  ],
  [
    "cronNeverFires",
    errors.cronNeverFires("0 0 30 2 *", "Europe/Berlin", "digest"),
    "Declaration",
    'app.cron(…): the pattern "0 0 30 2 *" in time zone "Europe/Berlin" never fires from now on: check its day and month fields (route "digest")',
  ],
  [
    "cronNeedsKey",
    errors.cronNeedsKey("digest", "digest_jobs"),
    "Declaration",
    'app.cron(…) needs a dedup key column on the route\'s table: each tick is published with the key cron:<route>:<tick time>, so that every process running the app publishes it once; describe one with field.key() or .key(column(…)) (route "digest", table "digest_jobs")',
  ],
  [
    "cronCatchUpNeedsProcessedAt",
    errors.cronCatchUpNeedsProcessedAt("digest", "digest_jobs"),
    "Declaration",
    'app.cron(…, { catchUp }) needs a processedAt column on the route\'s table: on a table whose ack deletes the row, a handled tick\'s key is free again, and every start would publish it again; describe one with field.processedAt(), or drop catchUp (route "digest", table "digest_jobs")',
  ],
  [
    "cronCatchUpInvalid",
    errors.cronCatchUpInvalid(-1, "digest"),
    "Declaration",
    'app.cron(…, { catchUp: -1 }): catchUp is how many missed ticks to publish at start, a whole number from 0 (route "digest")',
  ],
  ["failsSchema", errors.failsSchema("title: required; pages: too big", place), "Decode", `the payload fails its schema: title: required; pages: too big${at}`],
  ["notUtf8Json", errors.notUtf8Json(new Error("Unexpected token"), place), "Decode", `the payload is not UTF-8 JSON: Unexpected token${at}`],
  [
    "Timeout",
    new errors.Timeout(30_000, place),
    "Timeout",
    `the delivery ran longer than its timeout of 30000 ms: ctx.signal aborted, and the row settles by the queue's onError policy${at}`,
  ],
  [
    "badTimeout",
    errors.badTimeout("ms", 0, { subscription: "reports", table: "report_jobs" }),
    "Declaration",
    'timeout ms must be a positive whole number of ms, got 0 (subscription "reports", table "report_jobs")',
  ],
  [
    "badTimeout",
    errors.badTimeout("graceMs", -1, { subscription: "reports", table: "report_jobs" }),
    "Declaration",
    'timeout graceMs must be a whole number of ms, 0 or more, got -1 (subscription "reports", table "report_jobs")',
  ],
  [
    "retainNeedsProcessedAt",
    errors.retainNeedsProcessedAt(place),
    "Declaration",
    `retain({ done }) needs a processedAt column: this table's ack deletes the row, so no handled row is kept to prune; describe one with field.processedAt(), or drop done${at}`,
  ],
  [
    "retainNeedsDeadLetterTable",
    errors.retainNeedsDeadLetterTable(place),
    "Declaration",
    `retain({ deadLettered }) needs a dead-letter table: declare one with .deadLetter(DeadTable), or drop deadLettered (dead letters in a group of this table are rows of this table, not pruned by it)${at}`,
  ],
  [
    "retainNeedsDeadLetterTime",
    errors.retainNeedsDeadLetterTime("dead_jobs", place),
    "Declaration",
    `retain({ deadLettered }) needs a processedAt column on the dead-letter table "dead_jobs": a move there stamps it with the time the row was dead-lettered, which the window counts from; describe one with field.processedAt() (or .processedAt(column("dead_at"))), or drop deadLettered${at}`,
  ],
  [
    "afterTimeoutGrace",
    errors.afterTimeoutGrace(place),
    "Timeout",
    `a statement through ctx.tx after the timeout's grace period: the handler's transaction was ended and the row released, so the statement was not run${at}`,
  ],
  ["workflowNameTaken", errors.workflowNameTaken("order"), "Declaration", 'workflow "order" is registered already, with other steps: give each workflow its own name'],
  [
    "stepRouteUndeclared",
    errors.stepRouteUndeclared("order", "ship", "ship"),
    "Declaration",
    'workflow "order", step "ship": its jobs go to route "ship", which this broker does not declare: declare it with .route(…, "ship") before .workflow(…) (route "ship")',
  ],
  [
    "stepRouteOtherTable",
    errors.stepRouteOtherTable("order", "ship", "ship", "mail_jobs", "ship_jobs"),
    "Declaration",
    'workflow "order", step "ship": route "ship" goes to table "mail_jobs", not to the step\'s table "ship_jobs" (route "ship")',
  ],
  [
    "stepRouteUnchecked",
    errors.stepRouteUnchecked("ship"),
    "Declaration",
    'route "ship" of a workflow step was not checked when the app started: register every workflow on the broker (broker.workflow(…)) before the app starts (route "ship")',
  ],
  [
    "workflowNotRegistered",
    errors.workflowNotRegistered("order"),
    "Declaration",
    'workflow "order" is not registered on this broker: register it with broker.workflow(…) before starting it',
  ],
  [
    "workflowCannotStart",
    errors.workflowCannotStart("order", 'the payload builder of step "charge" threw: no order id'),
    "Declaration",
    'workflow "order" cannot start, nothing was written: the payload builder of step "charge" threw: no order id',
  ],
  [
    "workflowUnknownHere",
    errors.workflowUnknownHere("order", "ship_jobs", "7"),
    "Declaration",
    'the job is a step of workflow "order", which this app\'s broker does not run: register it with broker.workflow(…) in every app that runs one of its steps; the ack was not written (table "ship_jobs", id 7)',
  ],
  [
    "workflowRowsOutOfStep",
    errors.workflowRowsOutOfStep("r1", 'step "ship"', "waiting"),
    "Schema",
    'workflow run r1: step "ship" is not waiting as the run\'s rows said; the workflow table was changed by something else, and the ack was not written',
  ],
  [
    "workflowTableMissing",
    errors.workflowTableMissing("sqlinbox_workflows"),
    "Schema",
    "the workflow table sqlinbox_workflows does not exist: the acks of workflow steps write to it; create it with createWorkflowTable(db), workflowTableSql(engine) or sqlinbox ddl --workflows",
  ],
  [
    "WorkflowEnded",
    new errors.WorkflowEnded("failed", "order", "r1", { failure: { step: "part", item: 1, reason: "out of stock" } }),
    "WorkflowEnded",
    'workflow "order", run r1: step "part" (item 1) failed: out of stock',
  ],
  ["WorkflowEnded", new errors.WorkflowEnded("notFound", "order", "r1"), "WorkflowEnded", 'workflow "order", run r1: no run has this id in the workflow table'],
  ["WorkflowEnded", new errors.WorkflowEnded("timeout", "order", "r1", { timeoutMs: 500 }), "WorkflowEnded", 'workflow "order", run r1: the run did not finish within 500 ms'],
  [
    "JobEnded",
    new errors.JobEnded("deadLettered", { route: "reports", table: "report_jobs", id: "7" }, { lastError: "Error: boom" }),
    "JobEnded",
    'the job was dead-lettered: Error: boom (route "reports", table "report_jobs", id 7)',
  ],
  ["JobEnded", new errors.JobEnded("cancelled", { route: "reports", id: "7" }), "JobEnded", 'the job was cancelled (route "reports", id 7)'],
  ["JobEnded", new errors.JobEnded("timeout", { route: "reports", id: "7" }, { timeoutMs: 500 }), "JobEnded", 'the job did not finish within 500 ms (route "reports", id 7)'],
  [
    "JobEnded",
    new errors.JobEnded("aborted", { route: "reports", id: "7" }),
    "JobEnded",
    'the wait for the job was aborted by its signal; the job itself goes on (route "reports", id 7)',
  ],
  [
    "JobEnded",
    new errors.JobEnded("notFound", { route: "reports", id: "7" }),
    "JobEnded",
    'no row has this id, and none was seen under it: it was never published, or it was handled and deleted (or cancelled) before the first look; a table without a processedAt column cannot tell these apart (route "reports", id 7)',
  ],
  [
    "deadLetterIdGenerated",
    errors.deadLetterIdGenerated("reports", "dead_jobs"),
    "Declaration",
    'broker.job(…, { deadLetter }): the dead-letter table "dead_jobs" generates its own ids, so a dead letter keeps no trace of the job\'s id; describe its id column without .generated() to follow jobs into it (route "reports")',
  ],
  [
    "deadLetterIdGenerated",
    errors.deadLetterIdGenerated("reports", "dead_jobs", "broker.jobs"),
    "Declaration",
    'broker.jobs(…, { deadLetter }): the dead-letter table "dead_jobs" generates its own ids, so a dead letter keeps no trace of the job\'s id; describe its id column without .generated() to follow jobs into it (route "reports")',
  ],
  [
    "badListLimit",
    errors.badListLimit(0, 1000, "reports"),
    "Declaration",
    'jobs(…).list({ limit }) must be a whole number from 1 to 1000, got 0: ask for the rest with the page\'s next cursor (route "reports")',
  ],
  [
    "badListCursor",
    errors.badListCursor("xyz", "waiting", "reports"),
    "Declaration",
    'jobs(…).list({ after }) is not a cursor of a "waiting" page: pass the `next` of the page before, unchanged, with the same state (got "xyz") (route "reports")',
  ],
  [
    "badListQuery",
    errors.badListQuery("jobs(…).list({ key }) needs a dedup key or an order key column: this table has neither", "reports", "report_jobs", "job_key"),
    "Declaration",
    'jobs(…).list({ key }) needs a dedup key or an order key column: this table has neither (route "reports", table "report_jobs", column "job_key")',
  ],
  [
    "relayNotConfirmed",
    errors.relayNotConfirmed("JetStream", ["7", "8"], 3, { subscription: "reports", table: "report_jobs" }, new Error("503 no responders")),
    "Handler",
    'JetStream did not confirm 2 of 3 messages (row ids 7, 8): 503 no responders; the rows stay in the table and the queue\'s onError policy retries them (subscription "reports", table "report_jobs")',
  ],
  [
    "relayNotConfirmed",
    errors.relayNotConfirmed(
      "Redis",
      Array.from({ length: 12 }, (_, i) => String(i)),
      12,
      { subscription: "reports", table: "report_jobs" },
      new Error("connection lost"),
    ),
    "Handler",
    'Redis did not confirm 12 of 12 messages (row ids 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …): connection lost; the rows stay in the table and the queue\'s onError policy retries them (subscription "reports", table "report_jobs")',
  ],
  [
    "inboxRouteWithoutKey",
    errors.inboxRouteWithoutKey("payments", "payment_inbox"),
    "Declaration",
    'an inbox bridge stores each message under its message id as the dedup key: describe a dedup key column on the route\'s table (field.key() or .key(column(…))) (route "payments", table "payment_inbox")',
  ],
];

describe("runtime error messages", () => {
  it.each(cases.map(([name, error, code, text], i) => [`${name} #${i}`, error, code, text] as const))("%s", (_name, error, code, text) => {
    expect(error.code).toBe(code);
    expect(error.message).toBe(`${code}: ${text}`);
  });

  it("every constructor of errors.ts is pinned above", () => {
    const constructors = Object.keys(errors).sort();
    const pinned = [...new Set(cases.map(([name]) => name))].sort();
    expect(pinned).toEqual(constructors);
  });

  it("a lost session keeps its cause", () => {
    const cause = new Error("terminated");
    expect(errors.transactionLost("ack", 1, cause, place).cause).toBe(cause);
    expect(errors.lockSessionLost("ack", cause, place).cause).toBe(cause);
    expect(errors.tableMissing(cause, place).cause).toBe(cause);
    expect(errors.notUtf8Json(cause, place).cause).toBe(cause);
    expect(errors.batchRolledBack("ack", 2, cause, place).cause).toBe(cause);
  });
});
