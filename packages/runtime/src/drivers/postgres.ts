import { PostgresDialect, Kysely } from "kysely";
import type { ListenClient, OpenedDatabase, PoolOptions } from "./types.js";

/** Opens a `pg` pool (loaded only now: `pg` is an optional peer). */
export async function openPostgres(url: string, pool: PoolOptions): Promise<OpenedDatabase> {
  const { default: pg } = await import("pg");
  const max = pool.max ?? 10;
  const pgPool = new pg.Pool({ connectionString: url, max });
  // A session that ends under the pool (pg_terminate_backend, a restart) must not crash the
  // process: the idle client is dropped by the pool, and a client in use (a row-lock
  // transaction, an advisory lock) fails its next statement, which the claim form reports.
  pgPool.on("error", () => {});
  pgPool.on("connect", (client) => client.on("error", () => {}));
  const dialect = new PostgresDialect({ pool: pgPool });
  const listen = async (): Promise<ListenClient> => (await pgPool.connect()) as unknown as ListenClient;
  return { db: new Kysely({ dialect }), engine: "postgres", poolMax: max, listen };
}
