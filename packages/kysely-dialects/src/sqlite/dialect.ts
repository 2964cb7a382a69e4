import type { EngineDialect } from "../types.js";
import { readFoundColumns } from "../shared/schema-check.js";
import { checkServerVersion } from "../shared/server-version.js";
import { sqliteAdvisory } from "./advisory.js";
import { sqliteLease } from "./lease.js";
import { sqlitePublish } from "./publish.js";
import { sqliteRowLock } from "./row-lock.js";
import { sqliteSchema } from "./schema.js";
import { sqliteTime } from "./time.js";

/**
 * SQLite 3.35+: lease (one `UPDATE … WHERE id IN (SELECT …) RETURNING`) and advisory with
 * keys held in the process; no row lock. Deadlines are fixed-width UTC ISO-8601 text.
 *
 * @example
 * const q = sqliteDialect.lease.claim(spec, { limit: 10, now, until, precision: 3 });
 * const { rows } = await db.executeQuery(q!);
 */
export const sqliteDialect: EngineDialect = Object.freeze({
  capabilities: Object.freeze({
    engine: "sqlite",
    updateReturning: true,
    insertReturning: true,
    rowLock: false,
    advisoryLocks: "process",
  }),
  time: sqliteTime,
  rowLock: sqliteRowLock,
  lease: sqliteLease,
  advisory: sqliteAdvisory,
  publish: sqlitePublish,
  schema: sqliteSchema,
  checkServerVersion: (version: string) => checkServerVersion("sqlite", version),
  readFoundColumns,
});
