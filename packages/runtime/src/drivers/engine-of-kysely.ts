import type { Engine } from "@sqlinbox/kysely-dialects";
import { MysqlAdapter, PostgresAdapter, SqliteAdapter, type Kysely } from "kysely";
import { unknownKyselyDialect } from "../errors.js";

/**
 * The engine an application's Kysely instance speaks, read from its dialect's adapter.
 *
 * @throws SqlInboxError `UnsupportedForm` on a dialect sqlinbox does not speak.
 */
export function engineOfKysely(db: Kysely<unknown>): Engine {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return "postgres";
  if (adapter instanceof MysqlAdapter) return "mysql";
  if (adapter instanceof SqliteAdapter) return "sqlite";
  throw unknownKyselyDialect(adapter.constructor.name);
}
