import BetterSqlite3 from "better-sqlite3";
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql, type LogEvent } from "kysely";
import { createPool } from "mysql2";
import pg from "pg";
import { withPreparedStatements } from "@sqlinbox/database";
import { postgresQueueStorage } from "@sqlinbox/kysely-dialects/internal";
import { MYSQL_URL, PG_URL, sqlitePath } from "./config.js";
import { payloadOf } from "./jobs.js";
import type { EngineName } from "./types.js";

// biome-ignore lint/suspicious/noExplicitAny: bench tables are named at run time, so no database interface describes them
export type AnyDb = Kysely<any>;

/** A Kysely instance on one engine with a pool of `max` connections. */
export function connect(engine: EngineName, max = 10, log?: (event: LogEvent) => void, options: { readonly prepared?: boolean } = {}): AnyDb {
  switch (engine) {
    case "postgres": {
      const pool = new pg.Pool({ connectionString: PG_URL, max });
      // An idle connection the server ended (a restart on a shared machine) is dropped, not a crash of the bench.
      pool.on("error", () => {});
      // `prepared`: the pool a broker made from a URL has (named prepared statements for what it repeats).
      return new Kysely({ log, dialect: new PostgresDialect({ pool: options.prepared === true ? withPreparedStatements(pool) : pool }) });
    }
    case "mariadb": {
      const pool = createPool({ uri: MYSQL_URL, connectionLimit: max });
      // `prepared`: mysql2's `execute` for every statement with parameters (prepared on the server once per
      // connection and text, then run by id in the binary protocol) in place of `query` (the text protocol).
      return new Kysely({ log, dialect: new MysqlDialect({ pool: options.prepared === true ? executingPool(pool) : pool }) });
    }
    case "sqlite":
      return new Kysely({
        log,
        dialect: new SqliteDialect({
          database: () => {
            const db = new BetterSqlite3(sqlitePath());
            db.pragma("journal_mode = WAL");
            db.pragma("busy_timeout = 5000");
            return Promise.resolve(db);
          },
        }),
      });
  }
}

type Mysql2Pool = ReturnType<typeof createPool>;
type Mysql2Connection = Parameters<Parameters<Mysql2Pool["getConnection"]>[0]>[1];

/** A mysql2 pool whose connections run parameterized statements with `execute` (server-side prepared, cached per connection). */
function executingPool(pool: Mysql2Pool): Mysql2Pool {
  const executing = new WeakSet<Mysql2Connection>();
  const wrap = (connection: Mysql2Connection): Mysql2Connection => {
    if (executing.has(connection)) return connection;
    executing.add(connection);
    const query = connection.query.bind(connection) as (...args: unknown[]) => unknown;
    const execute = connection.execute.bind(connection) as (...args: unknown[]) => unknown;
    // Kysely calls `query(sql, parameters, callback)`; a statement without parameters stays on the text protocol.
    (connection as unknown as { query: (...args: unknown[]) => unknown }).query = (text: unknown, parameters: unknown, ...rest: unknown[]) =>
      Array.isArray(parameters) && parameters.length > 0 && typeof rest[0] === "function" ? execute(text, parameters, ...rest) : query(text, parameters, ...rest);
    return connection;
  };
  return new Proxy(pool, {
    get(target, property, receiver) {
      if (property === "getConnection")
        return (callback: (error: NodeJS.ErrnoException | null, connection: Mysql2Connection) => void) =>
          target.getConnection((error, connection) => callback(error, error ? connection : wrap(connection)));
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The URL sqlinbox's `SqlBroker.fromUrl` takes for an engine. */
export function urlOf(engine: EngineName): string {
  return engine === "postgres" ? PG_URL : engine === "mariadb" ? MYSQL_URL.replace(/^mysql:/, "mariadb:") : `sqlite:${sqlitePath()}`;
}

export type FormName = "lease" | "rowLock" | "advisory";

/** The bench tables: one per claim form, the seed's shape (id, attempt, lease column, payload as JSON text). */
export function tableOf(form: FormName): string {
  return { lease: "bench_lease", rowLock: "bench_row_lock", advisory: "bench_advisory" }[form];
}

/**
 * The Postgres bench tables' storage settings, by `SQLINBOX_BENCH_PG_STORAGE`: `none` (the default: the server's own, as
 * the earlier published runs had) or `ddl` (what sqlinbox's generated DDL gives a queue table: fillfactor 70 and an early,
 * unthrottled autovacuum). The raw loop shares sqlinbox's table, so both get the same.
 */
export function pgStorage(): string {
  const choice = process.env.SQLINBOX_BENCH_PG_STORAGE ?? "none";
  if (choice === "none") return "";
  if (choice !== "ddl") throw new Error(`SQLINBOX_BENCH_PG_STORAGE is ${choice}: none or ddl`);
  return ` WITH (${Object.entries(postgresQueueStorage)
    .map(([k, v]) => `${k} = ${String(v)}`)
    .join(", ")})`;
}

function ddl(engine: EngineName, form: FormName): string {
  const t = tableOf(form);
  const id = { postgres: "id BIGSERIAL PRIMARY KEY", mariadb: "id BIGINT AUTO_INCREMENT PRIMARY KEY", sqlite: "id INTEGER PRIMARY KEY" }[engine];
  const lease = { postgres: "locked_until TIMESTAMPTZ NULL", mariadb: "locked_until DATETIME(6) NULL", sqlite: "locked_until TEXT NULL" }[engine];
  const cols = [id, "attempt INTEGER NOT NULL DEFAULT 1", ...(form === "lease" ? [lease] : []), "payload TEXT NOT NULL"];
  return `CREATE TABLE ${t} (${cols.join(", ")})${engine === "postgres" ? pgStorage() : ""}`;
}

/** Drops and creates the form's table: every round starts on a fresh, empty table. */
export async function recreateTable(db: AnyDb, engine: EngineName, form: FormName): Promise<void> {
  await sql.raw(`DROP TABLE IF EXISTS ${tableOf(form)}`).execute(db);
  await sql.raw(ddl(engine, form)).execute(db);
}

/** Inserts `n` rows with payloads `{"i": 0…n-1}`, in multi-row statements. */
export async function insertJobs(db: AnyDb, form: FormName, n: number, from = 0): Promise<void> {
  for (let start = from; start < from + n; start += 1_000) {
    const rows = [];
    for (let i = start; i < Math.min(from + n, start + 1_000); i++) rows.push({ payload: JSON.stringify(payloadOf(i)) });
    await db.insertInto(tableOf(form)).values(rows).execute();
  }
}

/**
 * Fresh planner statistics for the form's table, as autovacuum would leave them on a table that has been live a while:
 * Postgres `VACUUM ANALYZE` (the visibility map too), MariaDB `ANALYZE TABLE`, SQLite `ANALYZE`.
 */
export async function analyzeTable(db: AnyDb, engine: EngineName, table: string): Promise<void> {
  const statement = { postgres: `VACUUM ANALYZE ${table}`, mariadb: `ANALYZE TABLE ${table}`, sqlite: `ANALYZE ${table}` }[engine];
  await sql.raw(statement).execute(db);
}

export async function countRows(db: AnyDb, form: FormName): Promise<number> {
  const r = await db
    .selectFrom(tableOf(form))
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Lease-column precision of the bench tables: what `TIMESTAMPTZ`, `DATETIME(6)` and SQLite text keep. */
export const LEASE_PRECISION: Record<EngineName, number> = { postgres: 6, mariadb: 6, sqlite: 3 };
