import { PostgresDialect, Kysely } from "kysely";
import type { OpenedDatabase, PoolOptions } from "./types.js";

/** Opens a `pg` pool (loaded only now: `pg` is an optional peer). */
export async function openPostgres(url: string, pool: PoolOptions): Promise<OpenedDatabase> {
  const { default: pg } = await import("pg");
  const max = pool.max ?? 10;
  const dialect = new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max }) });
  return { db: new Kysely({ dialect }), engine: "postgres", poolMax: max };
}
