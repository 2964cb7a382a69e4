import { databaseTime, parseDatabaseUrl, redactSecrets, redactUrl, type ParsedUrl } from "@sqlinbox/database";
import { isSqlInboxError } from "@sqlinbox/core";
import type { Engine } from "@sqlinbox/kysely-dialects";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import type { Kysely } from "kysely";
import { CliError, ExitCode } from "./exit-codes.js";

export { redactUrl } from "@sqlinbox/database";

/** A Kysely over the URL's driver. It only runs compiled statements (tables are named at run time), so it knows no tables. */
export type OperatorDb = Kysely<unknown>;

export interface OpenedDatabase {
  readonly db: OperatorDb;
  readonly engine: Engine;
  /** The database (MySQL) or schema (Postgres) name; `main` on SQLite. Prefixes MySQL lock names. */
  readonly database: string;
  /** A label such as "PostgreSQL 15.20" or "MariaDB 10.11.19". */
  readonly server: string;
  /**
   * The database's time: the host's clock corrected by its offset from the database's, measured when
   * the database opened. Every "now" of a command reads it (a live lease, a due row), as the runtime's
   * claims read theirs: a host whose clock is off neither removes a row in work nor counts it wrong.
   */
  now(): Date;
  close(): Promise<void>;
}

/**
 * Opens the URL's database: `postgres://` / `postgresql://` (pg), `mysql://` / `mariadb://` (mysql2),
 * `sqlite:path` or `sqlite::memory:` (better-sqlite3; the file must exist). Only the scheme's driver is
 * loaded, with the options the runtime uses (`@sqlinbox/database`). Reads the server version and its
 * clock once, so a wrong URL fails here with exit code 2. Messages show the URL redacted, and none of
 * its secrets where the driver's own message repeats one (`redactUrl`, `redactSecrets`).
 */
export async function openDatabase(url: string): Promise<OpenedDatabase> {
  let parsed: ParsedUrl;
  try {
    parsed = parseDatabaseUrl(url);
  } catch (error) {
    if (isSqlInboxError(error, "Declaration")) throw new CliError(ExitCode.usage, error.message.replace(/^Declaration: /, ""), { cause: error });
    throw error;
  }
  let db: OperatorDb;
  try {
    db = (await parsed.open({ max: 4, existingFile: true })).db;
  } catch (error) {
    throw new CliError(ExitCode.cannotConnect, `cannot open ${redactUrl(url)}: ${redactSecrets((error as Error).message, url)}`, { cause: error });
  }
  const dialect = dialectFor(parsed.engine);
  try {
    const version = (await db.executeQuery(dialect.schema.serverVersion())).rows[0]?.version ?? "";
    const database = (await db.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "main";
    const server = dialect.checkServerVersion(String(version));
    const time = await databaseTime((query) => db.executeQuery(query), dialect);
    return { db, engine: parsed.engine, database: String(database), server, now: time.now, close: () => db.destroy() };
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw new CliError(ExitCode.cannotConnect, `cannot connect to ${redactUrl(url)}: ${redactSecrets((error as Error).message, url)}`, { cause: error });
  }
}
