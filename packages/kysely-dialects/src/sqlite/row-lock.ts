/**
 * SQLite has no row locks (`FOR UPDATE SKIP LOCKED`): a table on SQLite names the lease
 * or the advisory form, and the dialect's `rowLock` is `null` (the runtime reports
 * `UnsupportedForm`). Kept as a file so every engine folder has the same shape.
 */
export const sqliteRowLock = null;
