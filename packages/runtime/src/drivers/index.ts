import { sqliteUrlWithoutFile, unsupportedUrlScheme } from "../errors.js";
import type { Engine } from "@sqlinbox/kysely-dialects";
import type { OpenedDatabase, PoolOptions } from "./types.js";

export type { OpenedDatabase, PoolOptions } from "./types.js";

/** What a URL says before anything is loaded: the engine and how to open it. */
export interface ParsedUrl {
  readonly engine: Engine;
  readonly open: (pool: PoolOptions) => Promise<OpenedDatabase>;
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
  return { engine: "postgres", open: async (pool) => (await import("./postgres.js")).openPostgres(url, pool) };
}

function mysqlUrl(url: string): ParsedUrl {
  return { engine: "mysql", open: async (pool) => (await import("./mysql.js")).openMysql(url, pool) };
}

function sqliteUrl(url: string): ParsedUrl {
  const path = url.slice("sqlite:".length).replace(/^\/\//, "");
  if (path.length === 0) throw sqliteUrlWithoutFile();
  return { engine: "sqlite", open: async () => (await import("./sqlite.js")).openSqlite(path) };
}

/**
 * Reads a database URL: `postgres://…` (or `postgresql://`), `mysql://…`, `mariadb://…`,
 * `sqlite::memory:` or `sqlite:path/to/file.db`. The driver module loads only in `open`.
 */
export function parseDatabaseUrl(url: string): ParsedUrl {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase() ?? "";
  const parse = Object.hasOwn(byScheme, scheme) ? byScheme[scheme] : undefined;
  if (parse === undefined) throw unsupportedUrlScheme(scheme);
  return parse(url);
}
