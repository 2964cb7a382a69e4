import { SqlInboxError } from "@sqlinbox/core";
import type { VersionFloor } from "../shared/server-version.js";

/** `FOR UPDATE SKIP LOCKED` since MySQL 8.0.1. */
export const mysqlFloor = Object.freeze({ product: "MySQL", minimum: Object.freeze([8, 0, 1]) }) satisfies VersionFloor;
/** `FOR UPDATE SKIP LOCKED` since MariaDB 10.6. */
export const mariadbFloor = Object.freeze({ product: "MariaDB", minimum: Object.freeze([10, 6]) }) satisfies VersionFloor;

/**
 * The floor of the server a MySQL-protocol connection reports: MariaDB's when the version names
 * it (`10.11.19-MariaDB-0+deb12u1`), MySQL's otherwise.
 *
 * @throws SqlInboxError `UnsupportedForm` for TiDB: it speaks MySQL and reports a MySQL 8 version,
 * but runs `FOR UPDATE SKIP LOCKED` as a read that locks nothing, so two processes would claim the
 * same rows. Refused by name, never let through.
 */
export function mysqlVersionFloor(version: string): VersionFloor {
  if (/tidb/i.test(version)) {
    throw new SqlInboxError(
      "UnsupportedForm",
      `TiDB (${version}) runs FOR UPDATE SKIP LOCKED without locking, so two processes could claim the same row; sqlinbox does not run on it (see docs/scaling.md for the MySQL-compatible engines it does run on)`,
    );
  }
  return /mariadb/i.test(version) ? mariadbFloor : mysqlFloor;
}
