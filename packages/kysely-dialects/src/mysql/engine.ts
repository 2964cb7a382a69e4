import { buildDialect } from "../forms/dialect.js";
import type { EngineTraits } from "../forms/engine-traits.js";
import type { EngineCapabilities, EngineDialect } from "../types.js";
import { checkServerVersion } from "../shared/server-version.js";
import { mysqlSessionLocks } from "./advisory-lock.js";
import { mysqlDb } from "./query-builder.js";
import { mysqlSchema } from "./schema.js";
import { mysqlTableTypes } from "./table-types.js";
import { mysqlTime } from "./time.js";

/** What MySQL 8.0.1+ and MariaDB 10.6+ have in common, and why each answer is what it is. */
const capabilities: EngineCapabilities = Object.freeze({
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
  // REPEATABLE READ gap locks make concurrent claims deadlock far more often.
  claimIsolation: "read committed",
  // A shared claim's acks go in one DELETE, ordered by the key and limited to its ids: InnoDB locks every row a
  // DELETE scans (no semi-consistent read), and without the order the optimizer scans a small table, waiting on and
  // deadlocking with rows other claims hold (a MariaDB batch-handler drain fell to 245 jobs/s); with it, a range read
  // of the primary key (EXPLAIN on MariaDB 10.11, 8 rows: ALL without, range with).
  heldRowsAckTogether: true,
});

/** MySQL/MariaDB as the form builders see it: the list of what differs here. */
export const mysqlEngine: EngineTraits = Object.freeze({
  capabilities,
  time: mysqlTime,
  statements: Object.freeze({ db: mysqlDb, time: mysqlTime, capabilities }),
  // No UPDATE … RETURNING: claims are a locking select, then an update, in one short transaction.
  oneStatementClaim: null,
  sessionLocks: mysqlSessionLocks,
  schema: mysqlSchema,
  notify: null,
  // Queue tables: BIGINT AUTO_INCREMENT ids, DATETIME(3) times, LONGBLOB payloads, VARCHAR(255) keys; no partial index.
  tableTypes: mysqlTableTypes,
  checkServerVersion: (version: string) => checkServerVersion("mysql", version),
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
