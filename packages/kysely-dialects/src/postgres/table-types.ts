import type { TableTypes } from "../statements/create-table.js";
import type { QueueStorage } from "../statements/create-table.js";

/**
 * The storage settings of a queue table on PostgreSQL (`CREATE TABLE … WITH (…)`). Every job is
 * inserted, updated once (its lease stamp, or a retry) and deleted or marked processed, and each
 * change leaves a dead row version behind until it is reclaimed. A table about 13% larger buys
 * 44% fewer dead versions (an hour at 2,000 jobs/s, `docs/benchmarks.md`); the claim is as fast either way.
 */
export const postgresQueueStorage: QueueStorage = Object.freeze({
  /**
   * Pages filled to 70% by inserts: the update of a row (its lease stamp) finds room in its own page,
   * so it is a HOT update (no index entry), and page pruning reclaims the dead versions between vacuums.
   */
  fillfactor: 70,
  /** Vacuum once 1% of the rows are dead, not 20%: a queue's live rows are few, its dead ones many. */
  autovacuum_vacuum_scale_factor: 0.01,
  /** …plus 1000 dead rows, so that a nearly empty table is not vacuumed after every few jobs. */
  autovacuum_vacuum_threshold: 1000,
  /** Never throttled: a vacuum of a small, hot table is short, and a throttled one lets dead rows pile up. */
  autovacuum_vacuum_cost_delay: 0,
});

/** A queue table's columns on PostgreSQL, each a type the startup check accepts. */
export const postgresTableTypes: TableTypes = Object.freeze({
  // A sequence-backed bigint: ids never run out and never come back.
  generatedId: { type: "bigserial", autoIncrement: false },
  portable: Object.freeze({
    text: "text",
    bigint: "bigint",
    integer: "integer",
    double: "double precision",
    boolean: "boolean",
    // The zoned type: a timestamp without a zone would drop the parameter's offset.
    timestamp: "timestamptz",
    // Binary JSON: queryable, and what the pg driver reads back as an object.
    json: "jsonb",
    bytes: "bytea",
  }),
  // Text of any length can be a key and lead an index here.
  indexedText: "text",
  // The lease deadline is a token compared for equality: the zoned type keeps it exact (6 digits).
  time: "timestamptz",
  payload: "bytea",
  headers: "jsonb",
  counter: "integer",
  longText: "text",
  // `CREATE INDEX … WHERE processed_at IS NULL`: processed rows cost the claim index nothing.
  partialIndexes: true,
  queueStorage: postgresQueueStorage,
});
