import { createHash } from "node:crypto";

/** The longest name `GET_LOCK` accepts on MySQL (MariaDB accepts more; the same rule keeps both alike). */
export const MYSQL_LOCK_NAME_MAX = 64;

/**
 * The `GET_LOCK` name of a key: prefixed with the database name (user locks are
 * server-wide, so two databases on one server must not share them), and replaced by its
 * SHA-256 in hex (exactly 64 characters) when longer than MySQL's 64.
 *
 * @example
 * mysqlLockName("app", "report_jobs:7") // "app.report_jobs:7"
 */
export function mysqlLockName(database: string, key: string): string {
  const name = `${database}.${key}`;
  if ([...name].length <= MYSQL_LOCK_NAME_MAX) return name;
  return createHash("sha256").update(name, "utf8").digest("hex");
}
