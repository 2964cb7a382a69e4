import { buildDialect } from "../forms/dialect.js";
import type { EngineTraits } from "../forms/engine-traits.js";
import type { EngineCapabilities, EngineDialect } from "../types.js";
import { mysqlSessionLocks } from "./advisory-lock.js";
import { mysqlOperator } from "./operator.js";
import { mysqlOrderKeyLocks } from "./order-key-lock.js";
import { mysqlDb } from "./query-builder.js";
import { mysqlSchema, mysqlSchemaRules } from "./schema.js";
import { mysqlTableTypes } from "./table-types.js";
import { mysqlTime } from "./time.js";
import { mariadbFloor, mysqlVersionFloor } from "./version.js";

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
  oneStatementClaim: null,
  sessionLocks: mysqlSessionLocks,
  // GET_LOCK on a hashed name: a session's lock, given back (`RELEASE_ALL_LOCKS()`) before the transaction ends.
  orderKeyLocks: mysqlOrderKeyLocks,
  schema: mysqlSchema,
  // Names without case; DATETIME(n) or TIMESTAMP(n) hold the codec's UTC text.
  schemaRules: mysqlSchemaRules,
  notify: null,
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
  // Queue tables: BIGINT AUTO_INCREMENT ids, DATETIME(3) times, LONGBLOB payloads, VARCHAR(255) keys; no partial index.
  tableTypes: mysqlTableTypes,
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
