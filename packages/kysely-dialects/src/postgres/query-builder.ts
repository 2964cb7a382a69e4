import { PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from "kysely";
import { compileOnly, type QueryDb } from "../statements/query-db.js";

/** The compile-only Kysely of this engine, made once; every postgres statement is built on it. */
export const postgresDb: QueryDb = compileOnly({
  adapter: () => new PostgresAdapter(),
  compiler: () => new PostgresQueryCompiler(),
  introspector: (db) => new PostgresIntrospector(db),
});
