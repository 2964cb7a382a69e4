import { SqliteDialect, Kysely } from "kysely";
import type { OpenedDatabase } from "./types.js";

/**
 * Opens a `better-sqlite3` database (loaded only now: an optional peer). A file is opened in
 * WAL mode with a busy timeout, so another process (a test, a second worker) can share it.
 */
export async function openSqlite(path: string): Promise<OpenedDatabase> {
  const { default: Database } = await import("better-sqlite3");
  const database = new Database(path);
  database.pragma("busy_timeout = 5000");
  if (path !== ":memory:") database.pragma("journal_mode = WAL");
  return { db: new Kysely({ dialect: new SqliteDialect({ database }) }), engine: "sqlite", poolMax: 1, connections: () => (database.open ? 1 : 0) };
}
