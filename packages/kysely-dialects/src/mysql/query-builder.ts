import { MysqlAdapter, MysqlIntrospector, MysqlQueryCompiler } from "kysely";
import { compileOnly, type QueryDb } from "../statements/query-db.js";

/** The compile-only Kysely of this engine, made once; every mysql statement is built on it. */
export const mysqlDb: QueryDb = compileOnly({
  adapter: () => new MysqlAdapter(),
  compiler: () => new MysqlQueryCompiler(),
  introspector: (db) => new MysqlIntrospector(db),
});
