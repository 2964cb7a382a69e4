/**
 * The three engines the runtime tests run on, with a setup connection for DDL and inspection.
 * Real servers only: an unreachable one fails the test with how to start it. `engines` holds the
 * ones `SQLINBOX_ENGINES` selects (every one when unset); a server it leaves out refuses to connect.
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import type { Engine } from "@sqlinbox/kysely-dialects";
import type { AnyKysely } from "../../src/drivers/database.js";
import { parseDatabaseUrl, redactUrl } from "@sqlinbox/database";
import { leftOutError, selects } from "../../../../test/support/engine-selection.js";

export { selects } from "../../../../test/support/engine-selection.js";

export const PG_URL = process.env["SQLINBOX_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
export const MYSQL_URL = process.env["SQLINBOX_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test";

export interface TestEngine {
  readonly name: "sqlite" | "postgres" | "mariadb";
  readonly engine: Engine;
  /** A URL for a broker (a fresh SQLite file per call). */
  url(): string;
  /** Opens a setup connection on `url`; fails with a hint when the server cannot be reached. */
  connect(url: string): Promise<AnyKysely>;
  /** `CREATE TABLE` of a lease queue: id, attempt (from 0), locked_until, payload bytes. */
  createLeaseTable(db: AnyKysely, table: string): Promise<void>;
  dropTable(db: AnyKysely, table: string): Promise<void>;
  /** A time for a raw insert into the lease column. */
  time(date: Date): unknown;
  cleanup(): void;
}

const files: string[] = [];

async function reach(url: string, what: string, name: TestEngine["name"]): Promise<AnyKysely> {
  if (name !== "sqlite" && !selects(name)) throw leftOutError(name, what);
  const { db } = await parseDatabaseUrl(url).open({ max: 4 });
  try {
    await sql`select 1`.execute(db);
  } catch (error) {
    await db.destroy().catch(() => {});
    throw new Error(`${what} at ${redactUrl(url)} cannot be reached (${(error as Error).message}): run \`bash scripts/services.sh\` to start the test databases`);
  }
  return db;
}

const allEngines: readonly TestEngine[] = [
  {
    name: "sqlite",
    engine: "sqlite",
    url: () => {
      const file = join(tmpdir(), `sqlinbox-runtime-${randomUUID()}.db`);
      files.push(file);
      return `sqlite:${file}`;
    },
    connect: (url) => reach(url, "SQLite", "sqlite"),
    createLeaseTable: async (db, table) => {
      await sql`CREATE TABLE IF NOT EXISTS ${sql.id(table)} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, payload BLOB NOT NULL)`.execute(db);
    },
    dropTable: async (db, table) => void (await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db)),
    time: (d) => d.toISOString(),
    cleanup: () => {
      for (const f of files.splice(0)) for (const s of ["", "-wal", "-shm"]) rmSync(f + s, { force: true });
    },
  },
  {
    name: "postgres",
    engine: "postgres",
    url: () => PG_URL,
    connect: (url) => reach(url, "PostgreSQL", "postgres"),
    createLeaseTable: async (db, table) => {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db);
      await sql`CREATE TABLE ${sql.id(table)} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, payload BYTEA NOT NULL)`.execute(db);
    },
    dropTable: async (db, table) => void (await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db)),
    time: (d) => d,
    cleanup: () => {},
  },
  {
    name: "mariadb",
    engine: "mysql",
    url: () => MYSQL_URL,
    connect: (url) => reach(url, "MariaDB", "mariadb"),
    createLeaseTable: async (db, table) => {
      await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db);
      await sql`CREATE TABLE ${sql.id(table)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, payload LONGBLOB NOT NULL) ENGINE=InnoDB`.execute(
        db,
      );
    },
    dropTable: async (db, table) => void (await sql`DROP TABLE IF EXISTS ${sql.id(table)}`.execute(db)),
    time: (d) => d.toISOString().replace("T", " ").replace("Z", ""),
    cleanup: () => {},
  },
];

/** The engines this run covers, in the order sqlite, postgres, mariadb: what every matrix iterates. */
export const engines: readonly TestEngine[] = allEngines.filter((engine) => selects(engine.name));

/**
 * One engine, whether this run covers it or not, for tests of that engine alone: gate them with
 * `describe.runIf(selects(name))`. SQLite needs no server, so a test may use it for behaviour no
 * engine changes whatever the run selects.
 */
export function engineNamed(name: TestEngine["name"]): TestEngine {
  return allEngines.find((engine) => engine.name === name) as TestEngine;
}

/** Removes the SQLite files every engine made; the setup file calls it after each test file. */
export function cleanupEngines(): void {
  for (const engine of allEngines) engine.cleanup();
}

export interface Row {
  id: number;
  attempt: number;
  locked_until: Date | null;
  payload: string;
}

/** The table's rows, normalized: numeric ids, deadlines as Dates, payloads as text. */
export async function readRows(engine: TestEngine, db: AnyKysely, table: string): Promise<Row[]> {
  const { rows } = await sql<Record<string, unknown>>`SELECT id, attempt, locked_until, payload FROM ${sql.id(table)} ORDER BY id`.execute(db);
  return rows.map((r) => ({
    id: Number(r["id"]),
    attempt: Number(r["attempt"]),
    locked_until: toDate(engine, r["locked_until"]),
    payload: Buffer.from(r["payload"] as Uint8Array).toString("utf8"),
  }));
}

function toDate(engine: TestEngine, raw: unknown): Date | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) return raw;
  const text = String(raw);
  return new Date(engine.engine === "mysql" ? `${text.replace(" ", "T")}Z` : text);
}

/** Inserts a row as another process would (no wake). */
export async function insertRaw(db: AnyKysely, table: string, values: { id?: number; attempt?: number; locked_until?: unknown; payload: Uint8Array }): Promise<void> {
  await db
    .insertInto(table)
    .values({ ...values })
    .execute();
}

export const unique = (prefix: string): string => `${prefix}_${randomUUID().slice(0, 8)}`;
