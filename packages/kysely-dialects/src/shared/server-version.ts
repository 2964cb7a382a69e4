import { SqlInboxError } from "@sqlinbox/core";
import type { Engine } from "../types.js";

/** A server product and the lowest version sqlinbox runs on. */
interface Floor {
  readonly product: string;
  readonly minimum: readonly number[];
}

/** The version floors: `SKIP LOCKED` (MySQL 8.0.1, MariaDB 10.6), `RETURNING` (SQLite 3.35), `hashtextextended` (Postgres 11). */
export const VERSION_FLOORS = {
  postgres: { product: "PostgreSQL", minimum: [11] },
  mysql: { product: "MySQL", minimum: [8, 0, 1] },
  mariadb: { product: "MariaDB", minimum: [10, 6] },
  sqlite: { product: "SQLite", minimum: [3, 35] },
} as const satisfies Record<string, Floor>;

function parseNumbers(version: string): number[] {
  const m = /(\d+(?:\.\d+)*)/.exec(version);
  return m === null ? [] : (m[1] ?? "").split(".").map(Number);
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Refuses a server below sqlinbox's floor with `ServerTooOld`, naming the version found and
 * the one required; returns a label such as `"MariaDB 10.11.19"`. `version` is what the
 * engine's `serverVersion()` statement returns (`SHOW server_version`, `VERSION()`, `sqlite_version()`).
 *
 * @example
 * checkServerVersion("mysql", "10.11.19-MariaDB-0+deb12u1") // "MariaDB 10.11.19"
 * checkServerVersion("mysql", "8.0.0") // throws ServerTooOld: MySQL 8.0.0 is older than 8.0.1 …
 */
export function checkServerVersion(engine: Engine, version: string): string {
  // Some MariaDB clients report "5.5.5-10.11.2-MariaDB" (a replication-protocol prefix).
  const cleaned = version.replace(/^5\.5\.5-/, "");
  // TiDB speaks MySQL and reports a MySQL 8 version, but runs `FOR UPDATE SKIP LOCKED` as a read
  // that locks nothing: two processes would claim the same rows. Refused by name, never let through.
  if (engine === "mysql" && /tidb/i.test(cleaned)) {
    throw new SqlInboxError(
      "UnsupportedForm",
      `TiDB (${version}) runs FOR UPDATE SKIP LOCKED without locking, so two processes could claim the same row; sqlinbox does not run on it (see docs/scaling.md for the MySQL-compatible engines it does run on)`,
    );
  }
  const floor: Floor = engine === "mysql" ? (/mariadb/i.test(cleaned) ? VERSION_FLOORS.mariadb : VERSION_FLOORS.mysql) : VERSION_FLOORS[engine];
  const found = parseNumbers(cleaned);
  const label = `${floor.product} ${found.join(".") || version}`;
  if (found.length === 0 || compare(found, floor.minimum) < 0) {
    throw new SqlInboxError(
      "ServerTooOld",
      `${floor.product} ${version} is older than ${floor.minimum.join(".")}, the lowest version sqlinbox supports; upgrade the server to ${floor.product} ${floor.minimum.join(".")} or later`,
    );
  }
  return label;
}
