import { SqlInboxError } from "@sqlinbox/core";

/** A server product and the lowest version sqlinbox runs on (each engine's `engine.ts` states its own, with the reason). */
export interface VersionFloor {
  readonly product: string;
  readonly minimum: readonly number[];
}

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
 * Refuses a server below `floor` with `ServerTooOld`, naming the version found and the one
 * required; returns a label such as `"MariaDB 10.11.19"`. `version` is what the engine's
 * `serverVersion()` statement returns (`SHOW server_version`, `VERSION()`, `sqlite_version()`).
 *
 * @example
 * checkVersionFloor({ product: "MariaDB", minimum: [10, 6] }, "10.11.19-MariaDB-0+deb12u1") // "MariaDB 10.11.19"
 * checkVersionFloor({ product: "MySQL", minimum: [8, 0, 1] }, "8.0.0") // throws ServerTooOld: MySQL 8.0.0 is older than 8.0.1 …
 */
export function checkVersionFloor(floor: VersionFloor, version: string): string {
  // Some MariaDB clients report "5.5.5-10.11.2-MariaDB" (a replication-protocol prefix).
  const found = parseNumbers(version.replace(/^5\.5\.5-/, ""));
  const label = `${floor.product} ${found.join(".") || version}`;
  if (found.length === 0 || compare(found, floor.minimum) < 0) {
    throw new SqlInboxError(
      "ServerTooOld",
      `${floor.product} ${version} is older than ${floor.minimum.join(".")}, the lowest version sqlinbox supports; upgrade the server to ${floor.product} ${floor.minimum.join(".")} or later`,
    );
  }
  return label;
}
