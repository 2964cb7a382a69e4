import { PostgresDialect, Kysely } from "kysely";
import { guardPgClient, type PgClient } from "./session-guard.js";
import { withPreparedStatements } from "./prepared-pool.js";
import type { ListenClient, OpenedDatabase, OpenOptions } from "./types.js";

/** Opens a `pg` pool (loaded only now: `pg` is an optional peer). */
export async function openPostgres(url: string, pool: OpenOptions): Promise<OpenedDatabase> {
  const { default: pg } = await import("pg");
  const max = pool.max ?? 10;
  const pgPool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: pool.connectTimeoutMs ?? 5000 });
  // A session that ends under the pool (pg_terminate_backend, a restart) must not crash the
  // process: the idle client is dropped by the pool, and a client in use (a row-lock
  // transaction, an advisory lock) fails its next statement, which the claim form reports.
  pgPool.on("error", () => {});
  pgPool.on("connect", (client) => client.on("error", () => {}));
  // Kysely sees guarded clients: one whose statement failed is closed, not pooled again; with
  // `preparedStatements`, the statements the pool repeats run named, planned once per session.
  const guardedPool =
    pool.preparedStatements === true
      ? withPreparedStatements(pgPool)
      : { connect: async () => guardPgClient((await pgPool.connect()) as unknown as PgClient), end: () => pgPool.end() };
  const dialect = new PostgresDialect({ pool: guardedPool as unknown as ConstructorParameters<typeof PostgresDialect>[0]["pool"] });
  const listen = async (): Promise<ListenClient> => (await pgPool.connect()) as unknown as ListenClient;
  return { db: new Kysely({ dialect }), engine: "postgres", poolMax: max, listen, connections: () => pgPool.totalCount };
}
