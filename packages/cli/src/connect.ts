import type { Engine } from "@sqlinbox/kysely-dialects";
import { dialectFor } from "@sqlinbox/kysely-dialects";
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect } from "kysely";
import { CliError, ExitCode } from "./exit-codes.js";

/** A Kysely over the URL's driver. It only runs compiled statements (tables are named at run time), so it knows no tables. */
export type OperatorDb = Kysely<unknown>;

export interface OpenedDatabase {
  readonly db: OperatorDb;
  readonly engine: Engine;
  /** The database (MySQL) or schema (Postgres) name; `main` on SQLite. Prefixes MySQL lock names. */
  readonly database: string;
  /** A label such as "PostgreSQL 15.20" or "MariaDB 10.11.19". */
  readonly server: string;
  close(): Promise<void>;
}

/** A URL without its password, for messages. */
export const redactUrl = (url: string): string => url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");

/**
 * Opens the URL's database: `postgres://` / `postgresql://` (pg), `mysql://` / `mariadb://` (mysql2),
 * `sqlite:path` or `sqlite::memory:` (better-sqlite3). Only the scheme's driver is loaded.
 * Reads the server version once, so a wrong URL fails here with exit code 2.
 */
export async function openDatabase(url: string): Promise<OpenedDatabase> {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase();
  let opened: { db: OperatorDb; engine: Engine };
  try {
    opened = await openDriver(scheme, url);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(ExitCode.cannotConnect, `cannot open ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  const dialect = dialectFor(opened.engine);
  try {
    const version = (await opened.db.executeQuery(dialect.schema.serverVersion())).rows[0]?.version ?? "";
    const database = (await opened.db.executeQuery(dialect.schema.currentDatabase())).rows[0]?.name ?? "main";
    const server = dialect.checkServerVersion(String(version));
    return { ...opened, database: String(database), server, close: () => opened.db.destroy() };
  } catch (error) {
    await opened.db.destroy().catch(() => undefined);
    throw new CliError(ExitCode.cannotConnect, `cannot connect to ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
}

async function openDriver(scheme: string | undefined, url: string): Promise<{ db: OperatorDb; engine: Engine }> {
  switch (scheme) {
    case "postgres":
    case "postgresql": {
      const { default: pg } = await import("pg");
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      pool.on("error", () => {});
      return { db: new Kysely({ dialect: new PostgresDialect({ pool }) }), engine: "postgres" };
    }
    case "mysql":
    case "mariadb": {
      const mysql = await import("mysql2");
      const createPool = mysql.createPool ?? (mysql as unknown as { default: typeof mysql }).default.createPool;
      // Time columns as UTC text: the form the dialect's time codec reads.
      const pool = createPool({ uri: url.replace(/^mariadb:/, "mysql:"), connectionLimit: 4, timezone: "Z", dateStrings: true, supportBigNumbers: true });
      return { db: new Kysely({ dialect: new MysqlDialect({ pool }) }), engine: "mysql" };
    }
    case "sqlite": {
      const path = url.slice("sqlite:".length).replace(/^\/\//, "");
      if (path.length === 0) throw new CliError(ExitCode.usage, "the SQLite URL names no file: use sqlite:path/to/file.db");
      const { default: Database } = await import("better-sqlite3");
      // The application may be writing the same file: wait for its locks instead of failing.
      const database = new Database(path, { fileMustExist: path !== ":memory:" });
      database.pragma("busy_timeout = 5000");
      return { db: new Kysely({ dialect: new SqliteDialect({ database }) }), engine: "sqlite" };
    }
    default:
      throw new CliError(ExitCode.usage, `unsupported database URL "${redactUrl(url)}": use postgres://, mysql://, mariadb:// or sqlite:path`);
  }
}
