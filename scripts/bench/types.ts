/** The engines a case runs on. */
export type EngineName = "postgres" | "mariadb" | "sqlite";
/** Where a case keeps its jobs: an SQL engine, or Redis (BullMQ's default backend). */
export type StoreName = EngineName | "redis";
export type SystemName = "sqlinbox" | "raw-sql" | "graphile-worker" | "pg-boss" | "bullmq";

/** What one W1 drain measured. */
export interface DrainRun {
  readonly ms: number;
  readonly processed: number;
  /** Statements sent to the database during the drain, where the adapter can count them. */
  readonly statements?: number;
}

/**
 * One system in one configuration on one engine: the common interface every adapter implements.
 * Rounds call `reset` → `insert(n)` → `analyze()` → `drain(tracker)`; `setup`/`teardown` run once around them.
 */
export interface DrainCase {
  /** Unique and stable: `system/engine/form/bB-wW`. */
  readonly id: string;
  readonly system: SystemName;
  readonly engine: StoreName;
  /** Claim form for sqlinbox and the raw loop; the configuration name for peers. */
  readonly variant: string;
  readonly settings: Readonly<Record<string, unknown>>;
  /** `null` when the case can run; otherwise why not (printed as "not available: …", never a number). */
  check(): Promise<string | null>;
  setup(): Promise<void>;
  /** Brings the case's own state (table, schema, queue) back to empty. */
  reset(): Promise<void>;
  /** Pre-inserts `n` no-op jobs whose payload is `{ "i": <index> }`. Not timed. */
  insert(n: number): Promise<void>;
  /**
   * Brings the planner's statistics up to date after the insert, as autovacuum would on a real table: Postgres
   * `VACUUM ANALYZE`, MariaDB `ANALYZE TABLE`, SQLite `ANALYZE`, on every table the system's claim reads. Not timed.
   */
  analyze(): Promise<void>;
  /** Starts consuming, resolves once every job was handled and settled, and stops. Timed by the caller. */
  drain(tracker: import("./jobs.js").JobTracker): Promise<Omit<DrainRun, "ms">>;
  teardown(): Promise<void>;
}
