import type { TimeCodec } from "../types.js";
import { parseUtcText, truncateToPrecision } from "../shared/time-text.js";

/**
 * Postgres `TIMESTAMPTZ` (6 fractional digits). `pg` sends a `Date` as its exact instant
 * (milliseconds, with the offset) and reads `TIMESTAMPTZ` back as a `Date`, so a token written
 * as a `Date` compares equal to itself. Text (a driver with its type parsers turned off) is read as ISO-8601.
 */
export const postgresTime: TimeCodec = {
  truncate: truncateToPrecision,
  encode: (date, precision) => truncateToPrecision(date, precision),
  decode: (raw) => {
    if (raw === null || raw === undefined) return null;
    if (raw instanceof Date) return new Date(raw.getTime());
    if (typeof raw === "string") return parseUtcText(raw);
    if (typeof raw === "number") return new Date(raw);
    throw new TypeError(`not a Postgres time: ${String(raw)}`);
  },
};
