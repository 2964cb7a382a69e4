import { MysqlDialect, Kysely } from "kysely";
import { guardMysqlConnection, type MysqlConnection } from "./session-guard.js";
import type { OpenedDatabase, OpenOptions } from "./types.js";

/**
 * Opens a `mysql2` pool for MySQL or MariaDB (loaded only now: `mysql2` is an optional peer).
 * Time columns come back as text in UTC, the form the dialect's time codec reads.
 */
export async function openMysql(url: string, pool: OpenOptions): Promise<OpenedDatabase> {
  const mysql = await import("mysql2");
  const max = pool.max ?? 10;
  const uri = url.replace(/^mariadb:/, "mysql:");
  const createPool = mysql.createPool ?? (mysql as unknown as { default: typeof mysql }).default.createPool;
  const raw = createPool({ uri, connectionLimit: max, timezone: "Z", dateStrings: true, supportBigNumbers: true, connectTimeout: pool.connectTimeoutMs ?? 5000 });
  // Kysely sees guarded connections: one whose statement failed is closed, not pooled again.
  const guardedPool = {
    getConnection: (callback: (error: unknown, connection: MysqlConnection) => void) =>
      raw.getConnection((error, connection) =>
        callback(error, error ? (connection as unknown as MysqlConnection) : guardMysqlConnection(connection as unknown as MysqlConnection)),
      ),
    end: (callback: (error: unknown) => void) => raw.end(callback),
  };
  const dialect = new MysqlDialect({ pool: guardedPool as unknown as ConstructorParameters<typeof MysqlDialect>[0]["pool"] });
  return {
    db: new Kysely({ dialect }),
    engine: "mysql",
    poolMax: max,
    connections: () => (raw as unknown as { _allConnections?: { length: number } })._allConnections?.length ?? 0,
  };
}
