import { MysqlDialect, Kysely } from "kysely";
import type { OpenedDatabase, PoolOptions } from "./types.js";

/**
 * Opens a `mysql2` pool for MySQL or MariaDB (loaded only now: `mysql2` is an optional peer).
 * Time columns come back as text in UTC, the form the dialect's time codec reads.
 */
export async function openMysql(url: string, pool: PoolOptions): Promise<OpenedDatabase> {
  const mysql = await import("mysql2");
  const max = pool.max ?? 10;
  const uri = url.replace(/^mariadb:/, "mysql:");
  const createPool = mysql.createPool ?? (mysql as unknown as { default: typeof mysql }).default.createPool;
  const dialect = new MysqlDialect({
    pool: createPool({ uri, connectionLimit: max, timezone: "Z", dateStrings: true, supportBigNumbers: true }),
  });
  return { db: new Kysely({ dialect }), engine: "mysql", poolMax: max };
}
