import { buildDialect, type NotifyingDialect } from "../forms/dialect.js";
import type { EngineTraits, OneStatementClaim } from "../forms/engine-traits.js";
import type { EngineCapabilities, NotifyStatements } from "../types.js";
import type { VersionFloor } from "../shared/server-version.js";
import { postgresSessionLocks } from "./advisory-lock.js";
import { claimWithCte } from "./claim-cte.js";
import { postgresNotify } from "./notify.js";
import { postgresOperator } from "./operator.js";
import { postgresOrderKeyLocks } from "./order-key-lock.js";
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
export const postgresEngine: EngineTraits & { readonly notify: NotifyStatements } = Object.freeze({
  capabilities,
  time: postgresTime,
  statements,
  // One statement: a CTE picks FOR UPDATE SKIP LOCKED, UPDATE … RETURNING marks and returns.
  oneStatementClaim,
  sessionLocks: postgresSessionLocks,
  // Transaction-level advisory locks on (table's class, hashtext(key)): the transaction's end gives them back.
  orderKeyLocks: postgresOrderKeyLocks,
  schema: postgresSchema,
  // Quoted names keep their case; only TIMESTAMPTZ keeps a deadline's offset.
  schemaRules: postgresSchemaRules,
  notify: postgresNotify,
  versionFloor: () => postgresFloor,
  // OpenTelemetry's db.system.name.
  dbSystemName: () => "postgresql",
  // Held advisory keys are read from `pg_locks`; `DEFAULT` resets an attempt column.
  operator: postgresOperator,
  // SQLSTATE 42P01, undefined_table: `relation "x" does not exist`.
  missingTable: (error: unknown) => (error as { code?: unknown } | null)?.code === "42P01",
  // Queue tables: BIGSERIAL ids, TIMESTAMPTZ times, BYTEA payloads, a partial claim index.
  tableTypes: postgresTableTypes,
});

/**
 * PostgreSQL 11+: every form; one-statement claims with `UPDATE … RETURNING`; advisory
 * locks on `hashtextextended(key, 0)`; deadlines in `TIMESTAMPTZ` passed as `Date`; LISTEN/NOTIFY.
 *
 * @example
 * const q = postgresDialect.lease.claim(RenderReport.description, { limit: 10, now, until, precision: 6 });
 * const { rows } = await db.executeQuery(q!);
 */
export const postgresDialect: NotifyingDialect = buildDialect(postgresEngine);
