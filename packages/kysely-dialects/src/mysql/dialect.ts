import type { EngineDialect } from "../types.js";
import { buildDialect } from "../forms/dialect.js";
import { mysqlEngine } from "./engine.js";

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
