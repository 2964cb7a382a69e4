import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { headersWithoutColumn } from "../errors.js";
import { encodePayload, type PayloadStorage } from "../declare/payload.js";

/** Metadata carried from a publish to `keys.headers`: string pairs such as a W3C `traceparent`. */
export type MessageHeaderValues = Readonly<Record<string, string>>;

/**
 * The rows a publish writes, keyed by column name: each payload encoded for its column (or, in
 * row mode, the described columns it names), the headers as JSON text in the headers column, and
 * the published name in the group column: a prefix route's published name is the group value.
 */
export function publishedRows(spec: InboxDescription, name: string, payloads: readonly unknown[], storage: PayloadStorage, headers: MessageHeaderValues | undefined): RawRow[] {
  if (headers !== undefined && spec.headers === undefined) throw headersWithoutColumn(name, spec.table);
  const headersText = headers === undefined ? undefined : JSON.stringify(headers);
  return payloads.map((payload) => {
    const row: RawRow = {};
    if (spec.payload !== undefined) {
      row[spec.payload.name] = encodePayload(payload, storage, { route: name, table: spec.table });
    } else {
      const values = (payload ?? {}) as Record<string, unknown>;
      for (const col of spec.columns) if (!col.generated && col.key in values) row[col.name] = values[col.key];
    }
    if (headersText !== undefined && spec.headers !== undefined) row[spec.headers.name] = headersText;
    if (spec.group !== undefined) row[spec.group.name] = name;
    return row;
  });
}

/**
 * Splits rows into inserts that each carry at most `maxParameters` bound values (65535 on
 * Postgres and MySQL, 32766 on SQLite): one multi-row insert per chunk.
 */
export function chunkRows(rows: readonly RawRow[], maxParameters: number): RawRow[][] {
  const perRow = Math.max(1, ...rows.map((r) => Object.keys(r).length));
  const size = Math.max(1, Math.floor(maxParameters / perRow));
  const chunks: RawRow[][] = [];
  for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size));
  return chunks;
}
