import { sqliteUrlWithoutFile, unsupportedUrlScheme } from "../errors.js";
import type { Engine } from "@sqlinbox/kysely-dialects";
import type { OpenedDatabase, PoolOptions } from "./types.js";

export type { OpenedDatabase, PoolOptions } from "./types.js";

/** What a URL says before anything is loaded: the engine and how to open it. */
export interface ParsedUrl {
  readonly engine: Engine;
  readonly open: (pool: PoolOptions) => Promise<OpenedDatabase>;
}

/**
 * Reads a database URL: `postgres://…` (or `postgresql://`), `mysql://…`, `mariadb://…`,
 * `sqlite::memory:` or `sqlite:path/to/file.db`. The driver module loads only in `open`.
 */
export function parseDatabaseUrl(url: string): ParsedUrl {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case "postgres":
    case "postgresql":
      return { engine: "postgres", open: async (pool) => (await import("./postgres.js")).openPostgres(url, pool) };
    case "mysql":
    case "mariadb":
      return { engine: "mysql", open: async (pool) => (await import("./mysql.js")).openMysql(url, pool) };
    case "sqlite": {
      const path = url.slice("sqlite:".length).replace(/^\/\//, "");
      if (path.length === 0) throw sqliteUrlWithoutFile();
      return { engine: "sqlite", open: async () => (await import("./sqlite.js")).openSqlite(path) };
    }
    default:
      throw unsupportedUrlScheme(scheme ?? "");
  }
}
