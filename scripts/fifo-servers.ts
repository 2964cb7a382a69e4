/**
 * What the fifo cost scripts (`fifo-claim-cost.ts`, `fifo-count-cost.ts`) share: a Kysely on each
 * server engine, a table filled the same way on each, and the median they report.
 * (SQLINBOX_PG_URL / SQLINBOX_MYSQL_URL, default the local `test` databases)
 */
import { mysqlDialect, postgresDialect, type Engine, type EngineDialect } from "@sqlinbox/kysely-dialects";
import { Kysely, MysqlDialect, PostgresDialect, sql } from "kysely";
import { createPool } from "mysql2";
import pg from "pg";

// biome-ignore lint/suspicious/noExplicitAny: the tables are created at run time
export type Db = Kysely<any>;

const PG_URL = process.env["SQLINBOX_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL = process.env["SQLINBOX_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test";

export interface Server {
  readonly name: "postgres" | "mariadb";
  readonly engine: Engine;
  readonly dialect: EngineDialect;
  readonly db: Db;
}

/** A pool of two connections on each server engine; the caller destroys each `db`. */
export const openServers = (): Server[] => [
  {
    name: "postgres",
    engine: "postgres",
    dialect: postgresDialect,
    db: new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: 2 }) }) }),
  },
  {
    name: "mariadb",
    engine: "mysql",
    dialect: mysqlDialect,
    db: new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: MYSQL_URL, timezone: "Z", dateStrings: true, connectionLimit: 2 }) }) }),
  },
];

/** Drops and creates `table` with `ddl`, inserts `rows` 1,000 at a time, and analyzes it, so the planner sees its size. */
export async function fillTable(server: Server, table: string, ddl: readonly string[], rows: readonly Record<string, unknown>[]): Promise<void> {
  await sql`drop table if exists ${sql.id(table)}`.execute(server.db);
  for (const statement of ddl) await sql.raw(statement).execute(server.db);
  for (let i = 0; i < rows.length; i += 1000)
    await server.db
      .insertInto(table)
      .values(rows.slice(i, i + 1000))
      .execute();
  await sql.raw(server.name === "postgres" ? `analyze ${table}` : `analyze table ${table}`).execute(server.db);
}

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
