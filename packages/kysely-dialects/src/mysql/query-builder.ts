import { MysqlAdapter, MysqlIntrospector, MysqlQueryCompiler } from "kysely";
import { compileOnly, type StatementContext } from "../shared/query-db.js";
import { mysqlTime } from "./time.js";

/** The compile-only Kysely of this engine, made once; every mysql statement is built on it. */
export const mysqlContext: StatementContext = Object.freeze({
  db: compileOnly({
    adapter: () => new MysqlAdapter(),
    compiler: () => new MysqlQueryCompiler(),
    introspector: (db) => new MysqlIntrospector(db),
  }),
  time: mysqlTime,
  needsNullsFirst: false,
  updateReturning: false,
});
