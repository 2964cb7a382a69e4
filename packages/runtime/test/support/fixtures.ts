import { InboxSpec, column, payloadOf } from "@sqlinbox/core";
import { App, InboxQueue, SqlBroker, createControlTable, subscriber, type AppInfo, type HandlerFunction, type InboxQueue as Queue } from "../../src/index.js";
import { silentLogger } from "../../src/logger.js";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { unique, type TestEngine } from "./engines.js";

export interface Job {
  readonly n: number;
  readonly title?: string;
}

/** The lease table of the runtime tests, described by hand. */
export function jobsSpec(table: string) {
  return InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
}
export type JobsSpec = ReturnType<typeof jobsSpec>;

/** An app with one subscriber on route "jobs" of `table`. */
export function jobsApp(
  url: string,
  table: string,
  handler: HandlerFunction<JobsSpec>,
  configure: (q: Queue<JobsSpec>) => Queue<JobsSpec> = (q) => q,
  app: Omit<AppInfo, "name" | "version"> = {},
) {
  const spec = jobsSpec(table);
  const broker = SqlBroker.fromUrl(url, { pool: { max: 5 } }).route(spec, "jobs");
  const sub = subscriber(configure(InboxQueue.of(spec, "jobs").lease(2000)), handler);
  const built = new App({ name: "test", version: "0", logger: silentLogger, ...app }).withBroker(broker, (b) => b.include(sub));
  return { app: built, broker, sub, spec };
}

export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Registers the hooks a test file shares on one engine: a broker URL and a setup connection opened
 * once before its tests (`onConnected` receives them), closed and the engine's files removed after.
 */
export function useEngineConnection(engine: TestEngine, onConnected: (connection: { readonly url: string; readonly db: AnyKysely }) => void): void {
  let db: AnyKysely | undefined;
  beforeAll(async () => {
    const url = engine.url();
    db = await engine.connect(url);
    onConnected({ url, db });
  });
  afterAll(async () => {
    await db?.destroy();
    engine.cleanup();
  });
}

/** What `useJobTables` keeps for a file: the tables its tests made, and what to close after them. */
export interface JobTables {
  /** Dropped after the file's tests. */
  readonly tables: string[];
  /** Closed after the file's tests, last first (apps, brokers); a failure to close is ignored. */
  readonly closers: Array<() => Promise<unknown>>;
}

/**
 * Registers the hooks of a file whose tests each make tables and apps on one engine: connect once
 * (and create the control table, when `control`), `onConnected` receives the URL and connection;
 * after the tests, everything in `closers` closed last first, every table in `tables` dropped.
 */
export function useJobTables(
  engine: TestEngine,
  onConnected: (connection: { readonly url: string; readonly db: AnyKysely }) => void,
  options: { control?: boolean } = {},
): JobTables {
  const kept: JobTables = { tables: [], closers: [] };
  let db: AnyKysely | undefined;
  beforeAll(async () => {
    const url = engine.url();
    db = await engine.connect(url);
    if (options.control !== false) await createControlTable(db);
    onConnected({ url, db });
  });
  afterAll(async () => {
    for (const close of kept.closers.reverse()) await close().catch(() => {});
    for (const t of kept.tables) if (db !== undefined) await sql`DROP TABLE IF EXISTS ${sql.id(t)}`.execute(db);
    await db?.destroy();
    engine.cleanup();
  });
  return kept;
}

/** What `useLeaseTable` gives each test: the broker URL, a setup connection and this test's fresh table. */
export interface LeaseTableScope {
  readonly url: string;
  readonly db: AnyKysely;
  readonly table: string;
}

/**
 * Registers the hooks every lease test file shares on one engine: connect once, a fresh lease table
 * before each test, and after it every tracked app stopped (last first) and the table dropped.
 * `onScope` receives the scope before each test; the returned `track` registers an app to stop.
 */
export function useLeaseTable(engine: TestEngine, prefix: string, onScope: (scope: LeaseTableScope) => void): <T extends { stop(): Promise<unknown> }>(app: T) => T {
  let url = "";
  let db: AnyKysely | undefined;
  let table = "";
  const stops: Array<() => Promise<unknown>> = [];
  useEngineConnection(engine, (connected) => {
    ({ url, db } = connected);
  });
  beforeEach(async () => {
    table = unique(`${prefix}_${engine.name}`);
    await engine.createLeaseTable(db!, table);
    onScope({ url, db: db!, table });
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await engine.dropTable(db!, table);
  });
  return (app) => {
    stops.push(() => app.stop());
    return app;
  };
}

/** A lease table with a dedup key column `job_key` (the generated DDL gives it its unique index). */
export function keyedSpec(table: string) {
  return InboxSpec.table(table, column("id").generated())
    .attempt(column("attempt").generated())
    .lease(column("locked_until"))
    .key(column("job_key"))
    .payload(column("payload"), payloadOf<Job>());
}
