import type { TableTypes } from "../statements/create-table.js";

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
});
