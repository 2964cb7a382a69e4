/**
 * The engine × claim form matrix of the crash, serialization, double-delivery and pool
 * tests: one table shape for every form, its description per form, URLs whose sessions a
 * test can find on the server, and ways to find and kill a delivery's session.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { InboxSpec, column, payloadOf, type ClaimForm } from "@sqlinbox/core/internal";
import { mysqlLockName } from "@sqlinbox/kysely-dialects/internal";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import { App, HandlerOutcome, InboxQueue, SqlBroker, keys, subscriber, type LogFields, type Logger } from "../../src/index.js";
import { MYSQL_URL, PG_URL, engines, type TestEngine } from "./engines.js";
import { sleep } from "./sleep.js";
import { innodbTransactions } from "../../../../test/support/innodb-status.js";
import { fixtureBundle } from "./fixture-bundles.js";

export interface Job {
  readonly n: number;
}

export const FORMS: readonly ClaimForm[] = ["rowLock", "lease", "advisory"];

/** The forms an engine runs: SQLite has no row locks. */
export function formsOf(engine: TestEngine): readonly ClaimForm[] {
  return engine.engine === "sqlite" ? ["lease", "advisory"] : FORMS;
}

/** Every (engine, form) pair that exists. */
export const matrix: ReadonlyArray<{ engine: TestEngine; form: ClaimForm }> = engines.flatMap((engine) => formsOf(engine).map((form) => ({ engine, form })));
export const serverEngines = engines.filter((e) => e.engine !== "sqlite");

/** One table for every form: id, attempt (from 0), a lease column, an advisory key column `k`, the payload. */
export async function createJobsTable(engine: TestEngine, db: AnyKysely, table: string): Promise<void> {
  const t = sql.id(table);
  if (engine.engine === "sqlite") {
    await sql`CREATE TABLE IF NOT EXISTS ${t} (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TEXT, k TEXT NOT NULL, payload BLOB NOT NULL)`.execute(db);
    return;
  }
  await sql`DROP TABLE IF EXISTS ${t}`.execute(db);
  if (engine.engine === "postgres") {
    await sql`CREATE TABLE ${t} (id BIGSERIAL PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 1, locked_until TIMESTAMPTZ, k TEXT NOT NULL, payload BYTEA NOT NULL)`.execute(db);
  } else {
    await sql`CREATE TABLE ${t} (id BIGINT AUTO_INCREMENT PRIMARY KEY, attempt INT NOT NULL DEFAULT 1, locked_until DATETIME(6) NULL, k VARCHAR(64) NOT NULL, payload LONGBLOB NOT NULL) ENGINE=InnoDB`.execute(
      db,
    );
  }
}

/** The description of the jobs table in `form`; the advisory key is the `k` column. */
export function jobsSpecOf(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).data(column("k"));
  switch (form) {
    case "lease":
      return base.lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
    case "advisory":
      return base.advisoryLock("{k}").payload(column("payload"), payloadOf<Job>());
    case "rowLock":
      return base.payload(column("payload"), payloadOf<Job>());
  }
}

/** Inserts rows `n = from … from+count-1` with key `keyOf(n)` (default: one key per row), in one statement. */
export async function insertJobs(db: AnyKysely, table: string, count: number, keyOf: (n: number) => string = (n) => `row-${n}`, from = 0): Promise<void> {
  const rows = Array.from({ length: count }, (_, i) => ({ k: keyOf(from + i), payload: Buffer.from(JSON.stringify({ n: from + i }), "utf8") }));
  for (let i = 0; i < rows.length; i += 500)
    await db
      .insertInto(table)
      .values(rows.slice(i, i + 500))
      .execute();
}

export interface JobRow {
  readonly id: number;
  readonly attempt: number;
  readonly k: string;
}
/** The rows of `table`; `schema` names its database when `db` is connected to another one (MariaDB). */
export async function readJobs(db: AnyKysely, table: string, schema?: string): Promise<JobRow[]> {
  const { rows } = await sql<Record<string, unknown>>`SELECT id, attempt, k FROM ${schema === undefined ? sql.id(table) : sql.id(schema, table)} ORDER BY id`.execute(db);
  return rows.map((r) => ({ id: Number(r["id"]), attempt: Number(r["attempt"]), k: String(r["k"]) }));
}

/**
 * A URL whose sessions a test can tell apart on the server: Postgres tags them with an
 * `application_name`; on MariaDB the app gets a database of its own (`scope` names it).
 * SQLite: a fresh file.
 */
export async function scopedUrl(engine: TestEngine, setup: AnyKysely, scope: string): Promise<string> {
  if (engine.engine === "postgres") return `${PG_URL}${PG_URL.includes("?") ? "&" : "?"}application_name=${scope}`;
  if (engine.engine === "mysql") {
    await sql`CREATE DATABASE IF NOT EXISTS ${sql.id(scope)}`.execute(setup);
    const url = new URL(MYSQL_URL);
    url.pathname = `/${scope}`;
    return url.toString();
  }
  return engine.url();
}

/** Drops what `scopedUrl` created on the server. */
export async function dropScope(engine: TestEngine, setup: AnyKysely, scope: string): Promise<void> {
  if (engine.engine === "mysql") await sql`DROP DATABASE IF EXISTS ${sql.id(scope)}`.execute(setup);
}

/** The server sessions of a scope (the app's pool), as ids `killSession` takes. */
export async function sessionsOf(engine: TestEngine, setup: AnyKysely, scope: string): Promise<number[]> {
  if (engine.engine === "postgres") {
    const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE application_name = ${scope}`.execute(setup);
    return rows.map((r) => Number(r.pid));
  }
  const { rows } = await sql<{ id: number }>`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ${scope}`.execute(setup);
  return rows.map((r) => Number(r.id));
}

/** The session holding a delivery in `form`: its open transaction (row lock) or its key's lock (advisory). */
export async function deliverySession(engine: TestEngine, setup: AnyKysely, scope: string, form: ClaimForm, key: string, table: string): Promise<number | undefined> {
  if (engine.engine === "postgres") {
    if (form === "advisory") {
      const { rows } = await sql<{ pid: number }>`
        SELECT l.pid FROM pg_locks l, (SELECT hashtextextended(${`${table}:${key}`}, 0) AS h) k
        WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
          AND l.classid::bigint = ((k.h >> 32) & 4294967295) AND l.objid::bigint = (k.h & 4294967295)`.execute(setup);
      return rows[0]?.pid;
    }
    const { rows } = await sql<{ pid: number }>`SELECT pid FROM pg_stat_activity WHERE application_name = ${scope} AND state = 'idle in transaction'`.execute(setup);
    return rows[0]?.pid;
  }
  if (form === "advisory") {
    const { rows } = await sql<{ id: number | null }>`SELECT IS_USED_LOCK(${mysqlLockName(scope, `${table}:${key}`)}) AS id`.execute(setup);
    return rows[0]?.id ?? undefined;
  }
  return heldTransactionOf(setup, scope);
}

/**
 * MySQL/MariaDB: a session of the scope with a transaction that holds locks (a row-lock claim's), from the
 * InnoDB status: `INNODB_TRX` is not refreshed while it is polled (`innodbTransactions`).
 */
export async function heldTransactionOf(setup: AnyKysely, scope: string): Promise<number | undefined> {
  const { rows } = await sql<{ id: number }>`SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ${scope}`.execute(setup);
  const sessions = new Set(rows.map((r) => Number(r.id)));
  return (await innodbTransactions(setup)).find((t) => sessions.has(t.session) && t.lockStructs > 0)?.session;
}

/**
 * Ends a session from the server side: `pg_terminate_backend`, MariaDB `KILL`. True when it ended one; false when the
 * session had already ended (a pool closed it between its listing and the kill): Postgres answers false, MariaDB
 * "Unknown thread id" (1094), which is no failure of the test's.
 */
export async function killSession(engine: TestEngine, setup: AnyKysely, session: number): Promise<boolean> {
  if (engine.engine === "postgres") {
    const { rows } = await sql<{ ended: boolean }>`SELECT pg_terminate_backend(${session}) AS ended`.execute(setup);
    return rows[0]?.ended === true;
  }
  try {
    await sql.raw(`KILL ${Number(session)}`).execute(setup);
    return true;
  } catch (error) {
    if ((error as { errno?: unknown }).errno === 1094) return false;
    throw error;
  }
}

/** What the worker fixture prints, one JSON object a line. */
export interface WorkerLine {
  readonly event: "ready" | "start" | "done" | "error" | "stopped" | "warn";
  /** On `warn`: the message, and the clock skew it names. */
  readonly message?: string;
  readonly skewMs?: number;
  readonly id?: number;
  readonly n?: number;
  readonly attempt?: number;
  readonly code?: string;
  /** On `stopped`: MySQL/MariaDB deadlocks the worker retried. */
  readonly deadlocks?: number;
  /** On `start`, from the flow worker: the start on `ctx.now()`, the clock flow control reads. */
  readonly at?: number;
  readonly time: number;
}

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly lines: WorkerLine[];
  waitFor(predicate: (line: WorkerLine) => boolean, timeoutMs: number, what: string): Promise<WorkerLine>;
  readonly exited: Promise<number | null>;
}

const runtimeRoot = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** Starts `test/support/fixtures/worker.ts` in a child process. */
export function startWorker(env: {
  url: string;
  table: string;
  form: ClaimForm;
  workers: number;
  holdMs: number;
  leaseMs?: number;
  poolMax?: number;
  clockSkewMs?: number;
}): WorkerProcess {
  return startFixture("test/support/fixtures/worker.ts", {
    ...(env.clockSkewMs === undefined ? {} : { WORKER_CLOCK_SKEW_MS: String(env.clockSkewMs) }),
    WORKER_URL: env.url,
    WORKER_TABLE: env.table,
    WORKER_FORM: env.form,
    WORKER_WORKERS: String(env.workers),
    WORKER_HOLD_MS: String(env.holdMs),
    WORKER_LEASE_MS: String(env.leaseMs ?? 2000),
    WORKER_POOL_MAX: String(env.poolMax ?? env.workers + 1),
  });
}

/** Fixture processes still running: a test that failed before it ended its own leaves them here. */
const started = new Set<ChildProcess>();

/** Kills every fixture process a test file started and left running (the setup file's `afterAll`), by its id. */
export function stopStartedFixtures(): void {
  for (const child of started) child.kill("SIGKILL");
  started.clear();
}

/** Starts a fixture script (path from the runtime package) in a child process, its JSON lines collected. */
export function startFixture(script: string, env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [fixtureBundle(script)], {
    cwd: runtimeRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  child.on("exit", () => started.delete(child));
  const lines: WorkerLine[] = [];
  const waiters = new Set<() => void>();
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
    try {
      lines.push(JSON.parse(text) as WorkerLine);
    } catch {
      return;
    }
    for (const w of [...waiters]) w();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    waitFor: (predicate, timeoutMs, what) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = lines.find(predicate);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`worker ${child.pid}: no ${what} within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

/** Polls `predicate` every 20 ms until it holds or `timeoutMs` passes. */
export async function until(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** A delivery an in-process consumer saw. */
export interface Seen {
  readonly id: number;
  readonly n: number;
  readonly attempt: number | undefined;
  readonly at: number;
}

/** An error record an in-process consumer logged. */
interface LoggedError {
  readonly message: string;
  readonly code: unknown;
  readonly id: unknown;
}

/**
 * An app in this process with one subscriber on the jobs table in `form`; every delivery
 * is recorded in `seen` before `handle` runs; errors the runtime logs land in `errors`.
 */
export function consumer(
  url: string,
  table: string,
  form: ClaimForm,
  options: {
    workers?: number;
    batch?: number;
    poolMax?: number;
    leaseMs?: number;
    shutdownGrace?: number;
    handle?: (seen: Seen) => Promise<void>;
    pooler?: "session" | "transaction";
    preparedStatements?: boolean;
    listenNotify?: boolean;
  } = {},
) {
  const spec = jobsSpecOf(table, form);
  const seen: Seen[] = [];
  const errors: LoggedError[] = [];
  const warnings: string[] = [];
  /** Ids the app warned it lost the lease of (`lease lost: …`, from the lease keeper). */
  const leasesLost = new Set<number>();
  const codeOf = (fields: LogFields): unknown => fields["code"] ?? (fields["err"] as { code?: unknown } | undefined)?.code;
  /** A summary of a repeated error names the rows it counted (`ids`): each is recorded as its own line would have been. */
  const summarised = (fields: LogFields, message: string): void => {
    const ids = fields["ids"];
    if (Array.isArray(ids)) for (const id of ids) errors.push({ message, code: codeOf(fields), id });
  };
  const logger: Logger = {
    debug: () => {},
    info: (fields: LogFields, message: string) => {
      // "no longer failing: <message> (…)": the last rows counted of an error written before.
      const failed = /^no longer failing: (.*) \(seen /.exec(message)?.[1];
      if (failed !== undefined && errors.some((e) => e.message === failed)) summarised(fields, failed);
    },
    warn: (fields: LogFields, message: string) => {
      warnings.push(message);
      if (message.startsWith("lease lost") && fields["id"] !== undefined) leasesLost.add(Number(fields["id"]));
    },
    error: (fields: LogFields, message: string) => {
      if (fields["ids"] !== undefined) return summarised(fields, message.replace(/ \((still failing|until the stop): .*$/, ""));
      errors.push({ message, code: codeOf(fields), id: fields["id"] });
    },
  };
  const pool = { max: options.poolMax ?? (options.workers ?? 1) + 1 + (options.listenNotify === true ? 1 : 0) };
  const plain = SqlBroker.fromUrl(url, {
    pool,
    ...(options.pooler === undefined ? {} : { pooler: options.pooler }),
    ...(options.preparedStatements === undefined ? {} : { preparedStatements: options.preparedStatements }),
  }).lease(options.leaseMs ?? 2000);
  const broker = options.listenNotify === true ? ((plain as SqlBroker<Record<never, never>, "postgres">).listenNotify() as unknown as typeof plain) : plain;
  const queue = InboxQueue.of(spec, "jobs")
    .workers(options.workers ?? 1)
    .batch(options.batch ?? 1)
    .pollInterval(50);
  const sub = subscriber(queue, async (job, ctx) => {
    const record: Seen = { id: Number(ctx.id), n: job.n, attempt: ctx.get(keys.attempt), at: Date.now() };
    seen.push(record);
    await options.handle?.(record);
    return HandlerOutcome.ack();
  });
  const app = new App({ name: "consumer", version: "0", logger, shutdownGrace: options.shutdownGrace ?? 2000 }).withBroker(broker.route(spec, "jobs"), (b) => b.include(sub));
  return { app, seen, errors, warnings, leasesLost };
}
