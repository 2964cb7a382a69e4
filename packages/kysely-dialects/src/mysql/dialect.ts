import type { EngineDialect } from "../types.js";
import { readFoundColumns } from "../shared/schema-check.js";
import { checkServerVersion } from "../shared/server-version.js";
import { mysqlAdvisory } from "./advisory.js";
import { mysqlLease } from "./lease.js";
import { mysqlPublish } from "./publish.js";
import { mysqlRowLock } from "./row-lock.js";
import { mysqlSchema } from "./schema.js";
import { mysqlTime } from "./time.js";

/**
 * MySQL 8.0.1+ and MariaDB 10.6+, in the SQL both accept: no `RETURNING` anywhere (claims
 * are a locked select then an update, publishes read `insertId`), `GET_LOCK` for advisory
 * keys, deadlines as UTC text in `DATETIME(n)`. Claim transactions open READ COMMITTED.
 *
 * @example
 * const rows = await trx.executeQuery(mysqlDialect.lease.selectClaimable(spec, { limit: 10, now }));
 * await trx.executeQuery(mysqlDialect.lease.stampClaimed(spec, rows.rows.map((r) => r.id), until, 3));
 */
export const mysqlDialect: EngineDialect = Object.freeze({
  capabilities: Object.freeze({
    engine: "mysql",
    updateReturning: false,
    insertReturning: false,
    rowLock: true,
    advisoryLocks: "session",
    claimIsolation: "read committed",
  }),
  time: mysqlTime,
  rowLock: mysqlRowLock,
  lease: mysqlLease,
  advisory: mysqlAdvisory,
  publish: mysqlPublish,
  schema: mysqlSchema,
  checkServerVersion: (version: string) => checkServerVersion("mysql", version),
  readFoundColumns,
});
