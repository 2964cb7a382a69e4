import type { Engine } from "@sqlinbox/kysely-dialects";
import { type DialectAdapter, type Kysely, MysqlAdapter, PostgresAdapter, SqliteAdapter } from "kysely";
import { unknownKyselyDialect } from "../errors.js";

type AdapterClass = new () => DialectAdapter;

/**
 * The engine each of Kysely's own adapters declares. By the adapter's exact class: a subclass is
 * another engine (Kysely's CockroachDB adapter extends Postgres'), refused rather than run as this one.
 */
const engineOfAdapter: ReadonlyMap<AdapterClass, Engine> = new Map<AdapterClass, Engine>([
  [PostgresAdapter, "postgres"],
  [MysqlAdapter, "mysql"],
  [SqliteAdapter, "sqlite"],
]);

/**
 * The engine an application's Kysely instance speaks, read from its dialect's adapter.
 *
 * @throws SqlInboxError `UnsupportedForm` on a dialect sqlinbox does not speak, naming its adapter's class.
 */
export function engineOfKysely(db: Kysely<unknown>): Engine {
  const adapter = db.getExecutor().adapter;
  const engine = engineOfAdapter.get(adapter.constructor as AdapterClass);
  if (engine !== undefined) return engine;
  const extending = [...engineOfAdapter.keys()].find((known) => adapter instanceof known);
  throw unknownKyselyDialect(adapter.constructor.name, extending?.name);
}
