import type { TimeCodec } from "../types.js";
import { formatUtcText, parseUtcText, truncateToPrecision } from "../shared/time-text.js";

/**
 * MySQL/MariaDB `DATETIME(n)` (or `TIMESTAMP(n)` in a session whose `time_zone` is `+00:00`).
 * A time is written as UTC text `YYYY-MM-DD HH:MM:SS[.fff]` with exactly the column's `n`
 * digits, rounded down first, because the server would round a longer fraction up
 * (`TIME_TRUNCATE_FRACTIONAL` is off by default) and the token read back would differ.
 *
 * Read back: text when the `mysql2` pool has `dateStrings: true` (read as UTC); a `Date`
 * when it has `timezone: "Z"` (taken as is). A pool with neither reads DATETIME in the host's
 * zone, which is only right when the host runs in UTC.
 */
export const mysqlTime: TimeCodec = {
  truncate: truncateToPrecision,
  encode: (date, precision) => formatUtcText(date, precision),
  decode: (raw) => {
    if (raw === null || raw === undefined) return null;
    if (raw instanceof Date) return new Date(raw.getTime());
    if (typeof raw === "string") return parseUtcText(raw);
    throw new TypeError(`not a MySQL time: ${String(raw)}`);
  },
};
