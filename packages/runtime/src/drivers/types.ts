import type { Engine } from "@sqlinbox/kysely-dialects";
import type { AnyKysely } from "../database.js";

/** Pool options of a broker built from a URL. */
export interface PoolOptions {
  /** Connections at most (default 10; SQLite always uses one). */
  readonly max?: number;
}

/** A Kysely instance a driver opened for a broker. */
export interface OpenedDatabase {
  readonly db: AnyKysely;
  readonly engine: Engine;
  /** Connections the pool holds at most (`Infinity` when unknown, 1 for SQLite). */
  readonly poolMax: number;
}
