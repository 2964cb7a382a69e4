import type { InboxDescription, ColumnDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";

/** A delivery's headers as the propagator reads and writes them. */
export type HeaderCarrier = Record<string, string>;

/**
 * The headers column of a table, when its description has one (the `headers` role, JSON):
 * read through this narrow view so telemetry needs nothing more of the description.
 */
export function headersColumnOf(spec: InboxDescription): string | undefined {
  return (spec as { readonly headers?: ColumnDescription }).headers?.name;
}

/** The headers a row carries, whatever the column stores (a JSON value, JSON text, UTF-8 bytes); `undefined` when none. */
export function readHeaders(row: RawRow, column: string): HeaderCarrier | undefined {
  let value = row[column];
  if (value instanceof Uint8Array) value = new TextDecoder().decode(value);
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const carrier: HeaderCarrier = {};
  for (const [key, entry] of Object.entries(value)) if (typeof entry === "string") carrier[key] = entry;
  return carrier;
}

/** The headers a publish writes: those already in the row, with the propagator's (`traceparent`, `tracestate`) merged over them, as JSON text. */
export function writeHeaders(row: RawRow, column: string, injected: HeaderCarrier): void {
  row[column] = JSON.stringify({ ...(readHeaders(row, column) ?? {}), ...injected });
}
