import { buildDialect, type EngineDialect } from "../forms/dialect.js";
import type { EngineTraits } from "../forms/engine-traits.js";
import type { EngineCapabilities } from "../types.js";
import { mysqlSessionLocks } from "./advisory-lock.js";
import { mysqlOperator } from "./operator.js";
import { mysqlOrderKeyLocks } from "./order-key-lock.js";
import { mysqlLockWait } from "./lock-wait.js";
import { mysqlDb } from "./query-builder.js";
import { mysqlSchema, mysqlSchemaRules } from "./schema.js";
import { mysqlTableTypes } from "./table-types.js";
import { mysqlTime } from "./time.js";
import { mariadbFloor, mysqlVersionFloor } from "./version.js";
import { neverConnected } from "../shared/statement-outcome.js";

/** What MySQL 8.0.1+ and MariaDB 10.6+ have in common, and why each answer is what it is. */
export const mysqlCapabilities = Object.freeze({
  engine: "mysql",
  // MySQL has no RETURNING at all; MariaDB has it on DELETE and INSERT, but not on UPDATE.
  updateReturning: false,
  // MySQL has no INSERT … RETURNING: a publish reads insertId (consecutive ids in one insert).
  insertReturning: false,
  // FOR UPDATE SKIP LOCKED since MySQL 8.0.1 and MariaDB 10.6 (the version floors).
  rowLock: true,
  // Ascending order already puts NULL first.
  jsonTextCast: "char",
  nullsFirstByDefault: true,
  // GET_LOCK locks belong to the session and end with it.
  advisoryLocks: "session",
  // GET_LOCK names are server-wide and at most 64 characters: database-prefixed, hashed past that.
  advisoryLockName: "database-and-key",
  // No array type: a list is `IN (?, ?, …)`.
  arrayParameters: false,
  // A prepared statement takes at most 65535 placeholders.
  maxParameters: 65535,
  // A table description's schema names another database on the same server.
  tableSchemas: true,
  // No notifications between sessions: other processes see a publish at their next poll.
  listenNotify: false,
  // A server between the processes: they share no file.
  fileWakes: false,
  // DATETIME(n) comes back as text from a pool with dateStrings (the runtime's server check reads which).
  readsTimeAsDate: false,
  // A pool of connections, each its own writer.
  singleWriter: false,
  // REPEATABLE READ gap locks make concurrent claims deadlock far more often.
  claimIsolation: "read committed",
  // A shared claim's acks go in one DELETE, ordered by the key and limited to its ids: InnoDB locks every row a
  // DELETE scans (no semi-consistent read), and without the order the optimizer scans a small table, waiting on and
  // deadlocking with rows other claims hold (a MariaDB batch-handler drain fell to 245 jobs/s); with it, a range read
  // of the primary key (EXPLAIN on MariaDB 10.11, 8 rows: ALL without, range with).
  heldRowsAckTogether: true,
}) satisfies EngineCapabilities;
const capabilities: EngineCapabilities = mysqlCapabilities;

/** MySQL/MariaDB as the form builders see it: the list of what differs here. */
export const mysqlEngine: EngineTraits = Object.freeze({
  capabilities,
  time: mysqlTime,
  statements: Object.freeze({ db: mysqlDb, time: mysqlTime, capabilities }),
  // No UPDATE … RETURNING: claims are a locking select, then an update, in one short transaction.
  // Retention batches: an `IN` subquery may not carry a `LIMIT` (MariaDB error 1235), and a single-table delete takes one.
  batchDelete: "order by and limit",
  oneStatementClaim: "select then stamp",
  sessionLocks: mysqlSessionLocks,
  // GET_LOCK on a hashed name: a session's lock, given back (`RELEASE_ALL_LOCKS()`) before the transaction ends.
  orderKeyLocks: mysqlOrderKeyLocks,
  // A claim queued for a cap's slot waits at most its bound: innodb_lock_wait_timeout (whole seconds), set back after the wait.
  lockWait: mysqlLockWait,
  schema: mysqlSchema,
  // Names without case; DATETIME(n) or TIMESTAMP(n) hold the codec's UTC text.
  schemaRules: mysqlSchemaRules,
  notify: "no notifications",
  fileWake: "no shared file",
  // Two products, two floors (MySQL 8.0.1, MariaDB 10.6: SKIP LOCKED); TiDB refused by name.
  versionFloor: mysqlVersionFloor,
  // The semantic conventions tell MariaDB from MySQL: the version check's label names the product.
  dbSystemName: (serverLabel: string) => (serverLabel.startsWith(mariadbFloor.product) ? "mariadb" : "mysql"),
  // Held advisory keys through `IS_USED_LOCK`; `DEFAULT` resets an attempt column.
  operator: mysqlOperator,
  // ER_NO_SUCH_TABLE (1146): `Table 'db.x' doesn't exist`, on MySQL and MariaDB alike.
  missingTable: (error: unknown) => {
    const e = error as { errno?: unknown; code?: unknown } | null;
    return e?.errno === 1146 || e?.code === "ER_NO_SUCH_TABLE";
  },
  // The server's answer (an error packet: `errno` and `sqlState`) that did not end the connection, but a statement
  // interrupted by a kill or a shutdown (1317, 1927, 1053), whose commit may have happened; 2006/2013 are the client's.
  // A connection `mysql2` already knows is closed refuses a query without sending it.
  wroteNothing: (error: unknown) => {
    const e = error as { errno?: unknown; sqlState?: unknown; fatal?: unknown; message?: unknown } | null;
    const serverAnswer = typeof e?.errno === "number" && typeof e.sqlState === "string" && e.fatal !== true;
    const notSent = typeof e?.message === "string" && e.message.startsWith("Can't add new command when connection is in closed state");
    return (serverAnswer && ![1317, 1927, 1053, 2006, 2013].includes(e.errno as number)) || notSent || neverConnected(error);
  },
  // Queue tables: BIGINT AUTO_INCREMENT ids, DATETIME(3) times, LONGBLOB payloads, VARCHAR(255) keys; no partial index.
  tableTypes: mysqlTableTypes,
  // A list page with no equality walks the primary key's id range in order (EXPLAIN on 100,000 rows).
  listWalk: "planner's choice",
});

/**
 * MySQL 8.0.1+ and MariaDB 10.6+, in the SQL both accept: no `RETURNING` anywhere (claims
 * are a locked select then an update, publishes read `insertId`), `GET_LOCK` for advisory
 * keys, deadlines as UTC text in `DATETIME(n)`. Claim transactions open READ COMMITTED.
 *
 * @example
 * const rows = await trx.executeQuery(mysqlDialect.lease.selectClaimable(spec, { limit: 10, now }));
 * await trx.executeQuery(mysqlDialect.lease.stampClaimed(spec, rows.rows.map((r) => r.id), until, 3));
 */
export const mysqlDialect: EngineDialect = buildDialect(mysqlEngine);
