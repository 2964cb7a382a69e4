import { buildDialect, type EngineDialect } from "../forms/dialect.js";
import type { EngineTraits, OneStatementClaim } from "../forms/engine-traits.js";
import type { EngineCapabilities } from "../types.js";
import type { VersionFloor } from "../shared/server-version.js";
import { claimUpdateReturning } from "./claim-update-returning.js";
import { sqliteFileWake } from "./file-wake.js";
import { sqliteOperator } from "./operator.js";
import { sqliteDb } from "./query-builder.js";
import { sqliteSchema, sqliteSchemaRules } from "./schema.js";
import { sqliteTableTypes } from "./table-types.js";
import { sqliteTime } from "./time.js";

/** What SQLite 3.35+ has, and why each answer is what it is. */
export const sqliteCapabilities = Object.freeze({
  engine: "sqlite",
  // RETURNING since 3.35 (the version floor).
  updateReturning: true,
  insertReturning: true,
  // No FOR UPDATE at all: one writer at a time is the lock, so no row-lock form.
  rowLock: false,
  // Ascending order already puts NULL first.
  jsonTextCast: "text",
  nullsFirstByDefault: true,
  // No session locks: keys live in a registry of the process (one database file, one process).
  advisoryLocks: "process",
  advisoryLockName: null,
  // No array type: a list is `IN (?, ?, …)`.
  arrayParameters: false,
  // SQLITE_MAX_VARIABLE_NUMBER defaults to 32766 since 3.32 (below the 3.35 floor).
  maxParameters: 32766,
  // Attached databases are per connection, not a place a description can name.
  tableSchemas: false,
  // No server to relay notifications.
  listenNotify: false,
  // Every process writes the one database file: a watch of it (and its WAL) sees their commits.
  fileWakes: true,
  // better-sqlite3 reads TEXT as text.
  readsTimeAsDate: false,
  // One connection per database file: a transaction holds it until it ends.
  singleWriter: true,
  // No row locks (no row-lock form): nothing is held for an ack to wait on.
  heldRowsAckTogether: false,
}) satisfies EngineCapabilities;
const capabilities: EngineCapabilities = sqliteCapabilities;

/** `RETURNING` since SQLite 3.35. */
export const sqliteFloor = Object.freeze({ product: "SQLite", minimum: Object.freeze([3, 35]) }) satisfies VersionFloor;

const statements = Object.freeze({ db: sqliteDb, time: sqliteTime, capabilities });
const oneStatementClaim: OneStatementClaim = claimUpdateReturning;

/** SQLite as the form builders see it: the list of what differs here. */
export const sqliteEngine: EngineTraits = Object.freeze({
  capabilities,
  time: sqliteTime,
  statements,
  // One statement: UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING.
  // Retention batches: the select picks the batch; `DELETE … LIMIT` needs a compile option better-sqlite3 does not promise.
  batchDelete: "ids from a select",
  oneStatementClaim,
  sessionLocks: "process registry",
  // No row-lock form, and one writer: rows commit in id order.
  orderKeyLocks: "no row-lock form",
  lockWait: "no row-lock form",
  schema: sqliteSchema,
  // Names without case; TEXT holds the codec's fixed-width ISO-8601 text, milliseconds kept.
  schemaRules: sqliteSchemaRules,
  notify: "no notifications",
  // The file itself: watched, with the data version telling another process's commit from ours.
  fileWake: sqliteFileWake,
  versionFloor: () => sqliteFloor,
  // OpenTelemetry's db.system.name.
  dbSystemName: () => "sqlite",
  // Advisory keys live in the application's process, out of the tools' sight; no `DEFAULT` in SET.
  operator: sqliteOperator,
  // SQLITE_ERROR has no code of its own for it: better-sqlite3's message is `no such table: x`.
  missingTable: (error: unknown) => error instanceof Error && /^no such table: /.test(error.message),
  // In the process, one call at a time: a statement that failed wrote nothing, and none is ever half sent.
  wroteNothing: () => true,
  // Queue tables: INTEGER PRIMARY KEY AUTOINCREMENT ids (never handed out twice), TEXT times, BLOB payloads, a partial claim index.
  tableTypes: sqliteTableTypes,
  // A list page with no equality: its planner takes the claim index's skip-scan for a run-at range and sorts every row it finds (EXPLAIN QUERY PLAN on 100,000 rows: USE TEMP B-TREE FOR ORDER BY).
  listWalk: "primary key",
});

/**
 * SQLite 3.35+: lease (one update of the ids a subquery picks, with `RETURNING`) and advisory with
 * keys held in the process; no row lock. Deadlines are fixed-width UTC ISO-8601 text.
 *
 * @example
 * const q = sqliteDialect.lease.claim(spec, { limit: 10, now, until, precision: 3 });
 * const { rows } = await db.executeQuery(q!);
 */
export const sqliteDialect: EngineDialect = buildDialect(sqliteEngine);
