import { SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from "kysely";
import { compileOnly, type QueryDb } from "../statements/query-db.js";

/** The compile-only Kysely of this engine, made once; every sqlite statement is built on it. */
export const sqliteDb: QueryDb = compileOnly({
  adapter: () => new SqliteAdapter(),
  compiler: () => new SqliteQueryCompiler(),
  introspector: (db) => new SqliteIntrospector(db),
});
