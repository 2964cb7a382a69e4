import { readFileSync } from "node:fs";
import { cpus, freemem, loadavg, platform, release, totalmem } from "node:os";
import { createRequire } from "node:module";
import { sql } from "kysely";
import { connect } from "./db.js";
import type { EngineName } from "./types.js";

const require = createRequire(import.meta.url);

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), "utf8")) as { version: string }).version;
  } catch {
    try {
      return (JSON.parse(readFileSync(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url), "utf8")) as { version: string }).version;
    } catch {
      return "unknown";
    }
  }
}

async function serverVersion(engine: EngineName): Promise<string> {
  const db = connect(engine, 1);
  try {
    const q = engine === "postgres" ? "SELECT version() AS v" : engine === "mariadb" ? "SELECT version() AS v" : "SELECT sqlite_version() AS v";
    const r = await sql.raw<{ v: string }>(q).execute(db);
    return String(r.rows[0]?.v);
  } catch (e) {
    return `unreachable: ${(e as Error).message}`;
  } finally {
    await db.destroy();
  }
}

/** What the numbers were measured on. */
export async function describeMachine() {
  return {
    platform: `${platform()} ${release()}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? "unknown",
    memoryMiB: Math.round(totalmem() / 2 ** 20),
    freeMemoryMiB: Math.round(freemem() / 2 ** 20),
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    node: process.version,
    servers: {
      postgres: await serverVersion("postgres"),
      mariadb: await serverVersion("mariadb"),
      sqlite: await serverVersion("sqlite"),
    },
    packages: Object.fromEntries(
      ["@sqlinbox/core", "@sqlinbox/kysely-dialects", "@sqlinbox/runtime", "kysely", "pg", "mysql2", "better-sqlite3", "graphile-worker", "pg-boss"].map((p) => [p, versionOf(p)]),
    ),
  };
}
