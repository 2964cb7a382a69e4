/**
 * The FIFO tests' tables: one queue shape for the row-lock and lease forms (a group, a priority,
 * a retryAfter column; the lease column is described in the lease form only) and a results
 * table whose generated id is the order in which handlers started and ended, across processes.
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import type { TestEngine } from "./engines.js";

export interface FifoJob {
  readonly n: number;
}

/** The queue: id, attempt, locked_until, retry_after, priority, grp, payload (JSON text). */
export async function createFifoTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, retry_after TEXT, priority INTEGER NOT NULL DEFAULT 0, grp TEXT NOT NULL, payload TEXT NOT NULL)`.execute(
      db,
    );
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, retry_after TIMESTAMPTZ, priority INTEGER NOT NULL DEFAULT 0, grp TEXT NOT NULL, payload TEXT NOT NULL)`.execute(
      db,
    );
  } else {
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, retry_after DATETIME(3) NULL, priority INT NOT NULL DEFAULT 0, grp VARCHAR(64) NOT NULL, payload TEXT NOT NULL, KEY (grp)) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

/** The results: one row per handler event, `seq` in the order the events were written. */
export async function createResultsTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE ${t} (seq INTEGER PRIMARY KEY AUTOINCREMENT, grp TEXT NOT NULL, n INTEGER NOT NULL, event TEXT NOT NULL, pid INTEGER NOT NULL)`.execute(db);
  } else if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (seq BIGSERIAL PRIMARY KEY, grp TEXT NOT NULL, n INTEGER NOT NULL, event TEXT NOT NULL, pid INTEGER NOT NULL)`.execute(db);
  } else {
    await sql`CREATE TABLE ${t} (seq BIGINT AUTO_INCREMENT PRIMARY KEY, grp VARCHAR(64) NOT NULL, n INT NOT NULL, event VARCHAR(8) NOT NULL, pid INT NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

/** The fifo description of the queue in `form` (row lock or lease: fifo and an advisory key exclude each other). */
export function fifoSpecOf(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    retry_after: field.retryAfter(),
    priority: field.priority(),
    grp: field.group(),
    payload: field.payload<FifoJob>(),
  };
  if (form === "lease") return defineInbox({ table, fifo: true, columns: { ...columns, locked_until: field.lease() } });
  return defineInbox({ table, fifo: true, columns });
}

export interface FifoRow {
  readonly grp: string;
  readonly n: number;
  readonly priority?: number;
  readonly retryAfter?: unknown;
}

/** Inserts rows behind the broker's back (no wake): a subscription sees them at its next poll. */
export async function insertFifoRows(db: AnyKysely, table: string, rows: readonly FifoRow[]): Promise<void> {
  await db
    .insertInto(table)
    .values(rows.map((r) => ({ grp: r.grp, priority: r.priority ?? 0, retry_after: r.retryAfter ?? null, payload: JSON.stringify({ n: r.n }) })))
    .execute();
}

export interface ResultEvent {
  readonly seq: number;
  readonly grp: string;
  readonly n: number;
  readonly event: "start" | "end";
  readonly pid: number;
}

export async function readResults(db: AnyKysely, table: string): Promise<ResultEvent[]> {
  const { rows } = await sql<Record<string, unknown>>`SELECT seq, grp, n, event, pid FROM ${sql.id(table)} ORDER BY seq`.execute(db);
  return rows.map((r) => ({ seq: Number(r["seq"]), grp: String(r["grp"]), n: Number(r["n"]), event: r["event"] as "start" | "end", pid: Number(r["pid"]) }));
}

/**
 * What the results say about one group: the rows in the order they started, and the pairs of rows
 * whose work overlapped (a row started before the one before it had ended).
 */
export function groupRuns(events: readonly ResultEvent[], grp: string): { order: number[]; overlaps: string[] } {
  const order: number[] = [];
  const overlaps: string[] = [];
  let inWork: number | undefined;
  for (const e of events.filter((x) => x.grp === grp)) {
    if (e.event === "start") {
      if (inWork !== undefined) overlaps.push(`${e.n} started while ${inWork} was in work`);
      inWork = e.n;
      order.push(e.n);
    } else {
      if (inWork !== e.n) overlaps.push(`${e.n} ended while ${String(inWork)} was the row in work`);
      inWork = undefined;
    }
  }
  return { order, overlaps };
}
