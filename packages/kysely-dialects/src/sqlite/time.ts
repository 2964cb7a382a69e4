import type { TimeCodec } from "../types.js";
import { parseUtcText, truncateToPrecision } from "../shared/time-text.js";

/**
 * SQLite keeps time as `TEXT` in one fixed-width UTC form, `YYYY-MM-DDTHH:MM:SS.sssZ`
 * (`Date.prototype.toISOString`), so that comparing the text compares the times.
 * Rows written by other means must use the same form (not `datetime('now')`, which has a space and no fraction).
 */
export const sqliteTime: TimeCodec = {
  truncate: truncateToPrecision,
  encode: (date, precision) => truncateToPrecision(date, precision).toISOString(),
  decode: (raw) => {
    if (raw === null || raw === undefined) return null;
    if (typeof raw === "string") return parseUtcText(raw);
    if (raw instanceof Date) return new Date(raw.getTime());
    if (typeof raw === "number") return new Date(raw);
    throw new TypeError(`not a SQLite time: ${String(raw)}`);
  },
};
