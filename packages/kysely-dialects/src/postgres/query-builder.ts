import { PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from "kysely";
import { compileOnly, type StatementContext } from "../shared/query-db.js";
import { postgresTime } from "./time.js";

/** The compile-only Kysely of this engine, made once; every postgres statement is built on it. */
export const postgresContext: StatementContext = Object.freeze({
  db: compileOnly({
    adapter: () => new PostgresAdapter(),
    compiler: () => new PostgresQueryCompiler(),
    introspector: (db) => new PostgresIntrospector(db),
  }),
  time: postgresTime,
  needsNullsFirst: true,
  updateReturning: true,
});
