import { SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from "kysely";
import { compileOnly, type StatementContext } from "../shared/query-db.js";
import { sqliteTime } from "./time.js";

/** The compile-only Kysely of this engine, made once; every sqlite statement is built on it. */
export const sqliteContext: StatementContext = Object.freeze({
  db: compileOnly({
    adapter: () => new SqliteAdapter(),
    compiler: () => new SqliteQueryCompiler(),
    introspector: (db) => new SqliteIntrospector(db),
  }),
  time: sqliteTime,
  needsNullsFirst: false,
  updateReturning: true,
});
