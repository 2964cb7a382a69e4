import { afterAll, beforeAll } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createPool } from "mysql2";
import pg from "pg";
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql } from "kysely";
import { leftOutError, selects } from "../../../../test/support/engine-selection.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
// biome-ignore lint/suspicious/noExplicitAny: test tables are created at run time
type Db = Kysely<any>;

const PG_URL = process.env.SQLINBOX_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const MYSQL_URL = process.env.SQLINBOX_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";

/** A real database the test drives directly (to make tables and hold locks) and hands the bin by URL. */
export interface TestDatabase {
  readonly name: "postgres" | "mariadb" | "sqlite";
  readonly url: string;
  readonly db: Db;
  /** Column types of this engine. */
  readonly types: { readonly id: string; readonly time: string; readonly text: string; readonly now: (offsetMs: number) => unknown };
  close(): Promise<void>;
}

const iso = (offsetMs: number) => new Date(Date.now() + offsetMs);
const mysqlText = (offsetMs: number) => iso(offsetMs).toISOString().replace("T", " ").replace("Z", "");

async function reach(db: Db, what: string): Promise<void> {
  try {
    await sql`select 1`.execute(db);
  } catch (error) {
    throw new Error(`${what} cannot be reached (${(error as Error).message}): start the test databases with \`bash scripts/services.sh\``);
  }
}

async function postgres(): Promise<TestDatabase> {
  if (!selects("postgres")) throw leftOutError("postgres", "PostgreSQL");
  const db: Db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: 6 }) }) });
  await reach(db, `PostgreSQL at ${PG_URL}`);
  return {
    name: "postgres",
    url: PG_URL,
    db,
    types: { id: "serial primary key", time: "timestamptz", text: "text", now: iso },
    close: () => db.destroy(),
  };
}

async function mariadb(): Promise<TestDatabase> {
  if (!selects("mariadb")) throw leftOutError("mariadb", "MariaDB");
  const db: Db = new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: MYSQL_URL, timezone: "Z", dateStrings: true, connectionLimit: 6 }) }) });
  await reach(db, `MariaDB at ${MYSQL_URL}`);
  return {
    name: "mariadb",
    url: MYSQL_URL,
    db,
    types: { id: "int auto_increment primary key", time: "datetime(3)", text: "varchar(255)", now: mysqlText },
    close: () => db.destroy(),
  };
}

/** SQLite in a temporary file the bin opens by `sqlite:<path>`. */
export async function sqlite(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), "sqlinbox-cli-"));
  const path = join(dir, "app.db");
  const database = new Database(path);
  database.pragma("journal_mode = WAL");
  const db: Db = new Kysely({ dialect: new SqliteDialect({ database }) });
  return {
    name: "sqlite",
    url: `sqlite:${path}`,
    db,
    types: { id: "integer primary key", time: "text", text: "text", now: (ms) => iso(ms).toISOString() },
    async close() {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The engines every command is tested on, as `SQLINBOX_ENGINES` selects them (all when unset). */
export const ENGINES = (
  [
    ["postgres", postgres],
    ["mariadb", mariadb],
    ["sqlite", sqlite],
  ] as const
).filter(([name]) => selects(name));

/** A table name no parallel test uses. */
export const uniqueName = (prefix: string): string => `${prefix}_${process.pid}_${randomBytes(3).toString("hex")}`;

/**
 * A queue table with the conventional column names, so `--table` reads its roles:
 * id, attempt, payload, grp, created_at, and (by `form`) locked_until, retry_after, processed_at, customer_id.
 */
export async function createQueue(
  t: TestDatabase,
  name: string,
  extra: { lease?: boolean; done?: boolean; delay?: boolean; customer?: boolean; lastError?: boolean; attemptsName?: string } = {},
): Promise<string> {
  const { types } = t;
  const cols = [
    `id ${types.id}`,
    `${extra.attemptsName ?? "attempt"} int not null default 1`,
    `payload ${types.text}`,
    `grp ${types.text}`,
    `created_at ${types.time}`,
    ...(extra.lease ? [`locked_until ${types.time} null`] : []),
    ...(extra.delay ? [`retry_after ${types.time} null`] : []),
    ...(extra.done ? [`processed_at ${types.time} null`] : []),
    ...(extra.customer ? [`customer_id ${types.text}`] : []),
    ...(extra.lastError ? [`last_error ${types.text}`] : []),
  ];
  await sql.raw(`create table ${name} (${cols.join(", ")})`).execute(t.db);
  return name;
}

/**
 * Registers the hooks of a describe block on one database: opened before its tests (`onOpen`
 * receives it), and after them every table pushed into `tables` dropped and the database closed.
 */
export function useTestDatabase(open: () => Promise<TestDatabase>, onOpen: (t: TestDatabase) => void): { readonly tables: string[] } {
  const tables: string[] = [];
  let t: TestDatabase | undefined;
  beforeAll(async () => {
    t = await open();
    onOpen(t);
  });
  afterAll(async () => {
    if (t === undefined) return;
    await dropTables(t, ...tables);
    await t.close();
  });
  return { tables };
}

export async function dropTables(t: TestDatabase, ...names: string[]): Promise<void> {
  for (const name of names) await sql.raw(`drop table if exists ${name}`).execute(t.db);
}

/** Inserts rows (created a minute ago unless given); rows with the same columns go in one statement. */
export async function insertRows(t: TestDatabase, table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
  const full = rows.map((r) => ({ created_at: t.types.now(-60_000), ...r }));
  let i = 0;
  while (i < full.length) {
    const shape = Object.keys(full[i]!).sort().join(",");
    let j = i;
    while (j < full.length && j - i < 500 && Object.keys(full[j]!).sort().join(",") === shape) j++;
    await t.db.insertInto(table).values(full.slice(i, j)).execute();
    i = j;
  }
}

/**
 * Locks the rows `lockSql` selects the way a row-lock claim holds them (READ COMMITTED, `FOR UPDATE
 * SKIP LOCKED`) in a transaction of its own, and keeps them until the returned release is awaited.
 */
export async function holdRows(db: TestDatabase["db"], lockSql: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  const holder = db
    .transaction()
    .setIsolationLevel("read committed")
    .execute(async (trx) => {
      await sql.raw(lockSql).execute(trx);
      holding();
      await released;
    });
  await held;
  return async () => {
    release();
    await holder;
  };
}
