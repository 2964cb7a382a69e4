import { buildDialect, type EngineDialect } from "../forms/dialect.js";
import type { EngineTraits, OneStatementClaim } from "../forms/engine-traits.js";
import type { EngineCapabilities } from "../types.js";
import type { VersionFloor } from "../shared/server-version.js";
import { postgresSessionLocks } from "./advisory-lock.js";
import { claimWithCte } from "./claim-cte.js";
import { postgresNotify } from "./notify.js";
import { neverConnected } from "../shared/statement-outcome.js";
import { postgresOperator } from "./operator.js";
import { postgresOrderKeyLocks } from "./order-key-lock.js";
import { postgresLockWait } from "./lock-wait.js";
import { postgresDb } from "./query-builder.js";
import { postgresSchema, postgresSchemaRules } from "./schema.js";
import { postgresTableTypes } from "./table-types.js";
import { postgresTime } from "./time.js";

/** What PostgreSQL 11+ has, and why each answer is what it is. */
export const postgresCapabilities = Object.freeze({
  engine: "postgres",
  // Every supported version has RETURNING on UPDATE, DELETE and INSERT.
  updateReturning: true,
  insertReturning: true,
  // FOR UPDATE SKIP LOCKED since 9.5.
  rowLock: true,
  // Ascending order puts NULL last unless told: claims say NULLS FIRST.
  jsonTextCast: "text",
  nullsFirstByDefault: false,
  // Advisory locks belong to the session and end with it.
  advisoryLocks: "session",
  // pg_try_advisory_lock takes a 64-bit number: the key's hashtextextended.
  advisoryLockName: "key-hash",
  // pg sends a JS array as a Postgres array; `= any($1)` takes the column type for it.
  arrayParameters: true,
  // The wire protocol counts parameters in 16 bits.
  maxParameters: 65535,
  // A table description's schema names a Postgres schema.
  tableSchemas: true,
  // LISTEN/NOTIFY, sent at commit.
  listenNotify: true,
  // A server between the processes: they share no file.
  fileWakes: false,
  // pg parses TIMESTAMPTZ into a Date.
  readsTimeAsDate: true,
  // A pool of connections, each its own writer.
  singleWriter: false,
  // A DELETE or UPDATE locks only the rows it matches; rows other transactions hold are read, not waited on.
  heldRowsAckTogether: true,
}) satisfies EngineCapabilities;
const capabilities: EngineCapabilities = postgresCapabilities;

/** `hashtextextended` (an advisory key's 64-bit hash) since PostgreSQL 11. */
export const postgresFloor = Object.freeze({ product: "PostgreSQL", minimum: Object.freeze([11]) }) satisfies VersionFloor;

const statements = Object.freeze({ db: postgresDb, time: postgresTime, capabilities });
const oneStatementClaim: OneStatementClaim = claimWithCte;

/** PostgreSQL as the form builders see it: the list of what differs here. */
export const postgresEngine: EngineTraits = Object.freeze({
  capabilities,
  time: postgresTime,
  statements,
  // One statement: a CTE picks FOR UPDATE SKIP LOCKED, UPDATE … RETURNING marks and returns.
  // Retention batches: the select picks the batch and skips rows another pruner locked (`FOR UPDATE SKIP LOCKED`),
  // into an array, so the delete looks each id up (a plain IN list was hashed against a scan of the whole table).
  batchDelete: "ids from an array of a select",
  oneStatementClaim,
  sessionLocks: postgresSessionLocks,
  // Transaction-level advisory locks on (table's class, hashtext(key)): the transaction's end gives them back.
  orderKeyLocks: postgresOrderKeyLocks,
  // A claim queued for a cap's slot waits at most its bound: lock_timeout, for the transaction alone.
  lockWait: postgresLockWait,
  schema: postgresSchema,
  // Quoted names keep their case; only TIMESTAMPTZ keeps a deadline's offset.
  schemaRules: postgresSchemaRules,
  notify: postgresNotify,
  fileWake: "no shared file",
  versionFloor: () => postgresFloor,
  // OpenTelemetry's db.system.name.
  dbSystemName: () => "postgresql",
  // Held advisory keys are read from `pg_locks`; `DEFAULT` resets an attempt column.
  operator: postgresOperator,
  // SQLSTATE 42P01, undefined_table: `relation "x" does not exist`.
  missingTable: (error: unknown) => (error as { code?: unknown } | null)?.code === "42P01",
  // The server's answer (a DatabaseError: `severity` and a SQLSTATE) to a statement it rolled back, but class 08
  // (connection exception) and 57P0x (the session terminated: pg_terminate_backend, a shutdown), which can come after a commit.
  // A client `pg` already knows is broken refuses a query without sending it ("… is not queryable").
  wroteNothing: (error: unknown) => {
    const e = error as { code?: unknown; severity?: unknown; message?: unknown } | null;
    const serverAnswer = typeof e?.severity === "string" && typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code);
    const notSent = typeof e?.message === "string" && /^Client (has encountered a connection error|was closed) and is not queryable$/.test(e.message);
    return (serverAnswer && !/^(08|57P0)/.test(e.code as string)) || notSent || neverConnected(error);
  },
  // Queue tables: BIGSERIAL ids, TIMESTAMPTZ times, BYTEA payloads, a partial claim index.
  tableTypes: postgresTableTypes,
  // A list page with no equality walks the primary key's id range in order (EXPLAIN on 100,000 rows).
  listWalk: "planner's choice",
});

/**
 * PostgreSQL 11+: every form; one-statement claims with `UPDATE … RETURNING`; advisory
 * locks on `hashtextextended(key, 0)`; deadlines in `TIMESTAMPTZ` passed as `Date`; LISTEN/NOTIFY.
 *
 * @example
 * const q = postgresDialect.lease.claim(RenderReport.description, { limit: 10, now, until, precision: 6 });
 * const { rows } = await db.executeQuery(q!);
 */
export const postgresDialect: EngineDialect = buildDialect(postgresEngine);
