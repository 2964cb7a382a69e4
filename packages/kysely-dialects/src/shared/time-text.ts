/**
 * Time helpers shared by the codecs. JavaScript dates keep milliseconds, so a column
 * that keeps more (TIMESTAMPTZ, DATETIME(6)) holds a token exactly, and one that keeps
 * fewer (DATETIME(0)) needs the token rounded down before it is written.
 */

/** `date` rounded down to `precision` fractional second digits (3 or more keeps it as is). */
export function truncateToPrecision(date: Date, precision: number): Date {
  if (precision >= 3) return new Date(date.getTime());
  const step = 10 ** (3 - Math.max(0, Math.floor(precision)));
  const ms = date.getTime();
  return new Date(ms - (((ms % step) + step) % step));
}

const pad = (n: number, width: number): string => String(n).padStart(width, "0");

/**
 * UTC text `YYYY-MM-DD HH:MM:SS[.fff…]` with exactly `precision` fractional digits
 * (0 to 6; digits past the millisecond are zeros).
 */
export function formatUtcText(date: Date, precision: number): string {
  const d = truncateToPrecision(date, precision);
  const base =
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  const digits = Math.min(6, Math.max(0, Math.floor(precision)));
  if (digits === 0) return base;
  return `${base}.${(`${pad(d.getUTCMilliseconds(), 3)}000`).slice(0, digits)}`;
}

/**
 * Reads time text as UTC: `YYYY-MM-DD HH:MM:SS[.f…]` (MySQL, no zone) or ISO-8601 with a
 * zone (`…T…Z`, `…+02:00`). Digits past the millisecond are dropped.
 */
export function parseUtcText(text: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(text.trim());
  if (m === null) {
    const parsed = new Date(text);
    if (Number.isNaN(parsed.getTime())) throw new TypeError(`not a time: ${JSON.stringify(text)}`);
    return parsed;
  }
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const ms = Number(`${frac ?? ""}000`.slice(0, 3));
  let time = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), ms);
  if (zone !== undefined && zone !== "Z") {
    const sign = zone.startsWith("-") ? -1 : 1;
    const digits = zone.slice(1).replace(":", "");
    time -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4))) * 60_000;
  }
  return new Date(time);
}
