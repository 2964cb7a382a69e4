/**
 * Tables of the dead-letter and poison-row tests: a jobs table in every form with a group column
 * and a last-error column (for moves to a group), and a dead-letter table for moves to a table.
 */
import { InboxSpec, column, payloadOf, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import type { Job } from "./claim-forms.js";
import type { TestEngine } from "./engines.js";

/**
 * `CREATE TABLE` of the jobs (id, attempt from 1, locked_until, k, grp, last_error, payload; with
 * `retryAfter`, a retry_after column too) and of its dead letters.
 */
export async function createTables(engine: TestEngine, db: AnyKysely, jobs: string, dead: string, options: { retryAfter?: boolean } = {}): Promise<void> {
  for (const t of [jobs, dead]) await sql`DROP TABLE IF EXISTS ${sql.id(t)}`.execute(db);
  const [j, d] = [sql.id(jobs), sql.id(dead)];
  const time = engine.engine === "sqlite" ? "TEXT" : engine.engine === "postgres" ? "TIMESTAMPTZ" : "DATETIME(6) NULL";
  const retryAfter = options.retryAfter === true ? sql.raw(`, retry_after ${time}`) : sql``;
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${j} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, k TEXT NOT NULL, grp TEXT NOT NULL, last_error TEXT, payload BLOB NOT NULL${retryAfter})`.execute(
      db,
    );
    await sql`CREATE TABLE ${d} (id INTEGER PRIMARY KEY, payload BLOB NOT NULL, last_error TEXT, failed_attempts INTEGER)`.execute(db);
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${j} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, k TEXT NOT NULL, grp TEXT NOT NULL, last_error TEXT, payload BYTEA NOT NULL${retryAfter})`.execute(
      db,
    );
    await sql`CREATE TABLE ${d} (id BIGSERIAL PRIMARY KEY, payload BYTEA NOT NULL, last_error TEXT, failed_attempts INTEGER)`.execute(db);
  } else {
    await sql`CREATE TABLE ${j} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, k VARCHAR(64) NOT NULL, grp VARCHAR(64) NOT NULL, last_error TEXT NULL, payload LONGBLOB NOT NULL${retryAfter}) ENGINE=InnoDB`.execute(
      db,
    );
    await sql`CREATE TABLE ${d} (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload LONGBLOB NOT NULL, last_error TEXT NULL, failed_attempts INT NULL) ENGINE=InnoDB`.execute(db);
  }
}

export async function dropTables(db: AnyKysely, ...tables: string[]): Promise<void> {
  for (const t of tables) await sql`DROP TABLE IF EXISTS ${sql.id(t)}`.execute(db);
}

/** The jobs table in `form`: grouped by `grp` (the route name selects it), with a last-error column. */
export function groupedJobsOf(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).data(column("k")).group(column("grp")).lastError(column("last_error"));
  switch (form) {
    case "lease":
      return base.lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
    case "advisory":
      return base.advisoryLock("{k}").payload(column("payload"), payloadOf<Job>());
    case "rowLock":
      return base.payload(column("payload"), payloadOf<Job>());
  }
}

/** `groupedJobsOf` with its retry_after column described (`createTables(…, { retryAfter: true })`): a `retryAfter` is stored in every form. */
export function retryJobsOf(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .data(column("k"))
    .group(column("grp"))
    .lastError(column("last_error"))
    .retryAfter(column("retry_after"));
  switch (form) {
    case "lease":
      return base.lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
    case "advisory":
      return base.advisoryLock("{k}").payload(column("payload"), payloadOf<Job>());
    case "rowLock":
      return base.payload(column("payload"), payloadOf<Job>());
  }
}

/** The dead-letter table: its own generated id, the payload, the last error and the attempts spent. */
export function deadJobsOf(table: string) {
  return InboxSpec.table(table, column("id").generated()).payload(column("payload"), payloadOf<Job>()).lastError(column("last_error")).failedAttempts(column("failed_attempts"));
}

/** Inserts rows `n = from …` in group `grp`; `poison` rows get a payload that is not JSON. */
export async function insertGrouped(db: AnyKysely, table: string, count: number, options: { from?: number; grp?: string; poison?: boolean } = {}): Promise<void> {
  const from = options.from ?? 0;
  const rows = Array.from({ length: count }, (_, i) => ({
    k: `row-${from + i}`,
    grp: options.grp ?? "jobs",
    payload: Buffer.from(options.poison ? "{not json" : JSON.stringify({ n: from + i }), "utf8"),
  }));
  await db.insertInto(table).values(rows).execute();
}

export interface DeadRow {
  readonly lastError: string | null;
  readonly failedAttempts: number | null;
  readonly payload: string;
}

export async function readDead(db: AnyKysely, table: string): Promise<DeadRow[]> {
  const { rows } = await sql<Record<string, unknown>>`SELECT payload, last_error, failed_attempts FROM ${sql.id(table)} ORDER BY id`.execute(db);
  return rows.map((r) => ({
    payload: Buffer.from(r["payload"] as Uint8Array).toString("utf8"),
    lastError: r["last_error"] === null ? null : String(r["last_error"]),
    failedAttempts: r["failed_attempts"] === null ? null : Number(r["failed_attempts"]),
  }));
}

export interface SourceRow {
  readonly id: number;
  readonly attempt: number;
  readonly grp: string;
  readonly lastError: string | null;
}

export async function readSource(db: AnyKysely, table: string): Promise<SourceRow[]> {
  const { rows } = await sql<Record<string, unknown>>`SELECT id, attempt, grp, last_error FROM ${sql.id(table)} ORDER BY id`.execute(db);
  return rows.map((r) => ({ id: Number(r["id"]), attempt: Number(r["attempt"]), grp: String(r["grp"]), lastError: r["last_error"] === null ? null : String(r["last_error"]) }));
}
