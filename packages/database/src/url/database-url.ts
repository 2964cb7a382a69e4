import type { Engine } from "@sqlinbox/kysely-dialects";
import type { OpenedDatabase, OpenOptions } from "../drivers/types.js";
import { sqliteUrlWithoutFile, unsupportedUrlScheme } from "../errors.js";

/** What a URL says before anything is loaded: the engine and how to open it. */
export interface ParsedUrl {
  readonly engine: Engine;
  readonly open: (options: OpenOptions) => Promise<OpenedDatabase>;
}

/** How a URL of each scheme opens: the engine it declares, and its driver module, loaded only in `open`. */
const byScheme: Readonly<Record<string, (url: string) => ParsedUrl>> = Object.freeze({
  postgres: postgresUrl,
  postgresql: postgresUrl,
  mysql: mysqlUrl,
  mariadb: mysqlUrl,
  sqlite: sqliteUrl,
});

function postgresUrl(url: string): ParsedUrl {
  return { engine: "postgres", open: async (options) => (await import("../drivers/postgres.js")).openPostgres(url, options) };
}

function mysqlUrl(url: string): ParsedUrl {
  return { engine: "mysql", open: async (options) => (await import("../drivers/mysql.js")).openMysql(url, options) };
}

function sqliteUrl(url: string): ParsedUrl {
  const path = url.slice("sqlite:".length).replace(/^\/\//, "");
  if (path.length === 0) throw sqliteUrlWithoutFile();
  return { engine: "sqlite", open: async (options) => (await import("../drivers/sqlite.js")).openSqlite(path, options) };
}

/**
 * Reads a database URL: `postgres://…` (or `postgresql://`), `mysql://…`, `mariadb://…`,
 * `sqlite::memory:` or `sqlite:path/to/file.db`. The driver module (`pg`, `mysql2`,
 * `better-sqlite3`: optional peers) loads only in `open`.
 *
 * @throws SqlInboxError `Declaration` on a scheme of no engine, or a SQLite URL without a path.
 *
 * @example
 * const { engine, open } = parseDatabaseUrl("postgres://app@db/app") // engine: "postgres"
 * const { db } = await open({ max: 4 })
 */
export function parseDatabaseUrl(url: string): ParsedUrl {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase() ?? "";
  const parse = Object.hasOwn(byScheme, scheme) ? byScheme[scheme] : undefined;
  if (parse === undefined) throw unsupportedUrlScheme(scheme);
  return parse(url);
}
