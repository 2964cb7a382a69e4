import { SqliteDialect, Kysely } from "kysely";
import type { OpenedDatabase, OpenOptions } from "./types.js";

/**
 * Opens a `better-sqlite3` database (loaded only now: an optional peer) with a busy timeout, so
 * another process (a test, a second worker, an operator tool) can share the file: it waits for
 * their locks instead of failing. A file is put in WAL mode, unless it must exist already
 * (`existingFile`: an operator tool leaves the file as its application made it).
 */
export async function openSqlite(path: string, options: OpenOptions = {}): Promise<OpenedDatabase> {
  const { default: Database } = await import("better-sqlite3");
  const existing = options.existingFile === true && path !== ":memory:";
  const database = new Database(path, { fileMustExist: existing });
  database.pragma("busy_timeout = 5000");
  if (path !== ":memory:" && !existing) database.pragma("journal_mode = WAL");
  return { db: new Kysely({ dialect: new SqliteDialect({ database }) }), engine: "sqlite", poolMax: 1, connections: () => (database.open ? 1 : 0) };
}
