import type { TableTypes } from "../statements/create-table.js";

/** A queue table's columns on SQLite, each a type the startup check accepts. */
export const sqliteTableTypes: TableTypes = Object.freeze({
  // The rowid itself, with AUTOINCREMENT: a plain INTEGER PRIMARY KEY hands a drained table's ids out
  // again (max + 1 starts over at 1), and a claim that read a row before it was finished must never
  // meet a new row under the same id.
  generatedId: { type: "integer", autoIncrement: true },
  portable: Object.freeze({
    text: "text",
    bigint: "integer",
    integer: "integer",
    double: "real",
    // 0 or 1: SQLite has no boolean type.
    boolean: "integer",
    // Fixed-width UTC ISO-8601 text, so that text order is time order.
    timestamp: "text",
    json: "text",
    bytes: "blob",
  }),
  indexedText: "text",
  // Fixed-width UTC ISO-8601 text written by the codec, milliseconds kept.
  time: "text",
  payload: "blob",
  headers: "text",
  counter: "integer",
  longText: "text",
  // `CREATE INDEX … WHERE processed_at IS NULL` (since 3.8).
  partialIndexes: true,
  // No per-table storage settings: a deleted row's page goes back to the file's free list.
  queueStorage: null,
});
