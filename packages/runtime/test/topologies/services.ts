/**
 * The topologies of `scripts/services.sh` (PgBouncer, a Postgres primary with its standby behind
 * HAProxy, three Galera nodes): started (idempotent, a second or less when up) and faulted from tests.
 */
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const script = join(dirname(fileURLToPath(import.meta.url)), "../../../../scripts/services.sh");

/** Runs `services.sh <commands…>`; its output comes back for the test's log. */
export async function services(...commands: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)("bash", [script, ...commands], { timeout: 240_000 });
  return stdout;
}

export const PGBOUNCER_TRANSACTION_URL = "postgres://postgres@127.0.0.1:6432/test";
export const PGBOUNCER_SESSION_URL = "postgres://postgres@127.0.0.1:6433/test";
/** HAProxy in front of whichever of the primary (5441) and the standby (5442) accepts sessions. */
export const PG_HA_URL = "postgres://postgres@127.0.0.1:5440/test";
export const PG_HA_PRIMARY_URL = "postgres://postgres@127.0.0.1:5441/test";
export const PG_HA_STANDBY_URL = "postgres://postgres@127.0.0.1:5442/test";
export const GALERA_URLS = [3307, 3308, 3309].map((port) => `mysql://root@127.0.0.1:${port}/test`);
