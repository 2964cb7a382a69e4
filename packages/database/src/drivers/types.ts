import type { Engine } from "@sqlinbox/kysely-dialects";
import type { Kysely } from "kysely";

// biome-ignore lint/suspicious/noExplicitAny: sqlinbox runs compiled queries on any database interface
export type AnyKysely = Kysely<any>;

/** Pool options of a database opened from a URL. */
export interface PoolOptions {
  /** Connections at most (default 10; SQLite always uses one). */
  readonly max?: number;
  /** How long opening one connection may take before it fails (default 5 s): a stop never waits on a server that does not answer. */
  readonly connectTimeoutMs?: number;
}

/** How a URL opens: its pool, and for an operator tool, a SQLite file as the application left it. */
export interface OpenOptions extends PoolOptions {
  /**
   * SQLite: the file must exist already (a typo is not a new empty database) and keeps its journal
   * mode (an application that opened it chose it). Default `false`: created when missing, in WAL mode.
   */
  readonly existingFile?: boolean;
  /**
   * Postgres: run the statements the pool repeats (from their second run, up to 256 texts) as named
   * prepared statements, which each session parses and plans once. Default `false`. A pooler in
   * transaction mode carries them only if it tracks them (PgBouncer 1.21+ with `max_prepared_statements`);
   * if the server says a name is missing or taken, naming stops for the pool after that statement.
   */
  readonly preparedStatements?: boolean;
}

/** A Kysely instance a driver opened. */
export interface OpenedDatabase {
  readonly db: AnyKysely;
  readonly engine: Engine;
  /** Connections the pool holds at most (`Infinity` when unknown, 1 for SQLite). */
  readonly poolMax: number;
  /** Connections the pool holds open now (for the stop report). */
  readonly connections?: () => number;
  /** Postgres opened from a URL: takes a pool connection for `listenNotify()`, held until released. */
  readonly listen?: () => Promise<ListenClient>;
}

/** The part of a `pg` pool client `listenNotify()` uses. */
export interface ListenClient {
  query(text: string, values?: unknown[]): Promise<unknown>;
  on(event: "notification", listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
  /** Back to the pool; with an error (or `true`) the connection is closed instead. */
  release(error?: Error | boolean): void;
}
