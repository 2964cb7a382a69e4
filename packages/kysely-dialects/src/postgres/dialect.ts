import type { EngineDialect } from "../types.js";
import { readFoundColumns } from "../shared/schema-check.js";
import { checkServerVersion } from "../shared/server-version.js";
import { postgresAdvisory } from "./advisory.js";
import { postgresLease } from "./lease.js";
import { postgresPublish } from "./publish.js";
import { postgresRowLock } from "./row-lock.js";
import { postgresSchema } from "./schema.js";
import { postgresTime } from "./time.js";

/**
 * PostgreSQL 11+: every form; one-statement claims with `UPDATE … RETURNING`; advisory
 * locks on `hashtextextended(key, 0)`; deadlines in `TIMESTAMPTZ` passed as `Date`.
 *
 * @example
 * const q = postgresDialect.lease.claim(RenderReport.description, { limit: 10, now, until, precision: 6 });
 * const { rows } = await db.executeQuery(q!);
 */
export const postgresDialect: EngineDialect = Object.freeze({
  capabilities: Object.freeze({
    engine: "postgres",
    updateReturning: true,
    insertReturning: true,
    rowLock: true,
    advisoryLocks: "session",
  }),
  time: postgresTime,
  rowLock: postgresRowLock,
  lease: postgresLease,
  advisory: postgresAdvisory,
  publish: postgresPublish,
  schema: postgresSchema,
  checkServerVersion: (version: string) => checkServerVersion("postgres", version),
  readFoundColumns,
});
