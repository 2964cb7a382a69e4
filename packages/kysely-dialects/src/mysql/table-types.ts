import type { TableTypes } from "../statements/create-table.js";

/** A queue table's columns on MySQL 8 and MariaDB 10.6+, each a type the startup check accepts. */
export const mysqlTableTypes: TableTypes = Object.freeze({
  generatedId: { type: "bigint", autoIncrement: true },
  portable: Object.freeze({
    text: "text",
    bigint: "bigint",
    integer: "int",
    double: "double",
    boolean: "boolean",
    // UTC text written by the codec, milliseconds kept: what a JavaScript Date holds.
    timestamp: "datetime(3)",
    // MySQL's native JSON; on MariaDB an alias of LONGTEXT with a validity check.
    json: "json",
    bytes: "longblob",
  }),
  // TEXT cannot be a key without a prefix length: 255 characters of utf8mb4 fit InnoDB's 3072-byte key.
  indexedText: "varchar(255)",
  // DATETIME(3): UTC text from the codec, milliseconds kept, so a lease token reads back equal.
  time: "datetime(3)",
  // A payload may exceed BLOB's 64 KiB.
  payload: "longblob",
  headers: "text",
  counter: "int",
  longText: "text",
  // No partial indexes: processedAt leads the claim index as an equality (`IS NULL` is a ref lookup).
  partialIndexes: false,
  // InnoDB has no per-table vacuum settings: its purge thread removes deleted rows in the background.
  queueStorage: null,
});
