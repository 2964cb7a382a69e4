import { SqlInboxError } from "@sqlinbox/core/internal";

/** `sqlite:` with no path after it. */
export function sqliteUrlWithoutFile(): SqlInboxError {
  return new SqlInboxError("Declaration", "the SQLite URL names no file: use sqlite::memory: or sqlite:path/to/file.db");
}

/** A URL whose scheme names no engine sqlinbox runs on. */
export function unsupportedUrlScheme(scheme: string): SqlInboxError {
  return new SqlInboxError("Declaration", `unsupported database URL scheme "${scheme}": use postgres://, mysql://, mariadb://, sqlite::memory: or sqlite:path`);
}
