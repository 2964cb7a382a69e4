import { buildDialect } from "../forms/dialect.js";
import type { EngineTraits, OneStatementClaim } from "../forms/engine-traits.js";
import type { EngineCapabilities, EngineDialect } from "../types.js";
import { checkServerVersion } from "../shared/server-version.js";
import { claimUpdateReturning } from "./claim-update-returning.js";
import { sqliteDb } from "./query-builder.js";
import { sqliteSchema } from "./schema.js";
import { sqliteTableTypes } from "./table-types.js";
import { sqliteTime } from "./time.js";

/** What SQLite 3.35+ has, and why each answer is what it is. */
const capabilities: EngineCapabilities = Object.freeze({
  engine: "sqlite",
  // RETURNING since 3.35 (the version floor).
  updateReturning: true,
  insertReturning: true,
  // No FOR UPDATE at all: one writer at a time is the lock, so no row-lock form.
  rowLock: false,
  // Ascending order already puts NULL first.
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
  // No row locks (no row-lock form): nothing is held for an ack to wait on.
  heldRowsAckTogether: false,
});

const statements = Object.freeze({ db: sqliteDb, time: sqliteTime, capabilities });
const oneStatementClaim: OneStatementClaim = claimUpdateReturning;

/** SQLite as the form builders see it: the list of what differs here. */
export const sqliteEngine: EngineTraits = Object.freeze({
  capabilities,
  time: sqliteTime,
  statements,
  // One statement: UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING.
  oneStatementClaim,
  sessionLocks: null,
  schema: sqliteSchema,
  notify: null,
  // Queue tables: INTEGER PRIMARY KEY AUTOINCREMENT ids (never handed out twice), TEXT times, BLOB payloads, a partial claim index.
  tableTypes: sqliteTableTypes,
  checkServerVersion: (version: string) => checkServerVersion("sqlite", version),
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
