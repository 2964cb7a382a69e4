import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createPool } from "mysql2";
import pg from "pg";
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql, type CompiledQuery, type QueryResult } from "kysely";
import { mysqlDialect, postgresDialect, sqliteDialect, type EngineDialect, type RawRow } from "../../src/index.js";
import { leftOutError, selects } from "../../../../test/support/engine-selection.js";

export { selects } from "../../../../test/support/engine-selection.js";

// biome-ignore lint/suspicious/noExplicitAny: test tables are created at run time
export type Db = Kysely<any>;

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL = process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";

/** A live engine: a Kysely over a real driver, the dialect under test, and the DDL of its test tables. */
export interface LiveEngine {
  readonly name: "postgres" | "mariadb" | "sqlite";
  readonly dialect: EngineDialect;
  readonly db: Db;
  /** The database (MySQL) or schema name, for lock names. */
  readonly database: string;
  /** The lease column's precision for tables made by `createJobsTable`. */
  readonly precision: number;
  /** Makes the test table: every role column plus `customer_id`; `leaseType` overrides the lease column's type. */
  createJobsTable(table: string, leaseType?: string): Promise<void>;
  close(): Promise<void>;
}

const redact = (url: string): string => url.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");

async function reach(db: Db, what: string, url: string): Promise<void> {
  try {
    await sql`select 1`.execute(db);
  } catch (error) {
    await db.destroy().catch(() => undefined);
    throw new Error(`${what} at ${redact(url)} cannot be reached (${(error as Error).message}): start the test databases with \`bash scripts/services.sh\``);
  }
}

/** A table name no other test (or parallel file) uses. */
export function uniqueTable(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString("hex")}`;
}

/** A live PostgreSQL; refused when `SQLINBOX_ENGINES` leaves it out (gate its tests with `selects("postgres")`). */
export async function connectPostgres(): Promise<LiveEngine> {
  if (!selects("postgres")) throw leftOutError("postgres", "PostgreSQL");
  const db: Db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: 8 }) }) });
  await reach(db, "PostgreSQL", PG_URL);
  const schema = (await db.executeQuery(postgresDialect.schema.currentDatabase())).rows[0]?.name ?? "public";
  return {
    name: "postgres",
    dialect: postgresDialect,
    db,
    database: schema,
    precision: 6,
    async createJobsTable(table, leaseType = "timestamptz") {
      await sql`create table ${sql.id(table)} (
        id serial primary key, attempt int not null default 1, locked_until ${sql.raw(leaseType)}, payload text,
        retry_after timestamptz, processed_at timestamptz, grp text, priority int not null default 0, customer_id text)`.execute(db);
    },
    close: () => db.destroy(),
  };
}

/** A live MariaDB; refused when `SQLINBOX_ENGINES` leaves it out (gate its tests with `selects("mariadb")`). */
export async function connectMariadb(): Promise<LiveEngine> {
  if (!selects("mariadb")) throw leftOutError("mariadb", "MariaDB");
  // `dateStrings: true`: DATETIME comes back as its text, which the codec reads as UTC.
  const pool = createPool({ uri: MYSQL_URL, timezone: "Z", dateStrings: true, connectionLimit: 8 });
  const db: Db = new Kysely({ dialect: new MysqlDialect({ pool }) });
  await reach(db, "MariaDB", MYSQL_URL);
  const database = (await db.executeQuery(mysqlDialect.schema.currentDatabase())).rows[0]?.name ?? "test";
  return {
    name: "mariadb",
    dialect: mysqlDialect,
    db,
    database,
    precision: 3,
    async createJobsTable(table, leaseType = "datetime(3)") {
      await sql`create table ${sql.id(table)} (
        id int auto_increment primary key, attempt int not null default 1, locked_until ${sql.raw(leaseType)} null, payload text,
        retry_after datetime(3) null, processed_at datetime(3) null, grp varchar(64), priority int not null default 0,
        customer_id varchar(64)) engine=InnoDB`.execute(db);
    },
    close: () => db.destroy(),
  };
}

/** SQLite in memory (one connection) or in a temporary file. */
export function connectSqlite(where: "memory" | "file"): LiveEngine {
  const dir = where === "file" ? mkdtempSync(join(tmpdir(), "sqlinbox-")) : null;
  const database = new Database(dir === null ? ":memory:" : join(dir, "test.db"));
  const db: Db = new Kysely({ dialect: new SqliteDialect({ database }) });
  return {
    name: "sqlite",
    dialect: sqliteDialect,
    db,
    database: "main",
    precision: 3,
    async createJobsTable(table, leaseType = "text") {
      await sql`create table ${sql.id(table)} (
        id integer primary key, attempt integer not null default 1, locked_until ${sql.raw(leaseType)}, payload text,
        retry_after text, processed_at text, grp text, priority integer not null default 0, customer_id text)`.execute(db);
    },
    async close() {
      await db.destroy();
      if (dir !== null) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function run(db: Db, query: CompiledQuery): Promise<QueryResult<RawRow>> {
  return (await db.executeQuery(query)) as QueryResult<RawRow>;
}

export const affected = (result: QueryResult<unknown>): number => Number(result.numAffectedRows ?? 0n);
