import type { InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { operatorFor, type DeadLetterPlace, type RowState } from "@sqlinbox/kysely-dialects/operator";
import type { PeekedRow } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";

/** What `peek` and `purge` select: a row state of the table, or its dead letters. */
export type RowSelection = RowState | "dead";

export interface PeekRequest {
  readonly state: RowSelection;
  readonly group?: string | undefined;
  readonly ids?: readonly string[] | undefined;
  readonly limit: number;
  readonly now: Date;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A payload as the runtime writes it: UTF-8 JSON in a bytes column, JSON text in a text column,
 * or the value a JSON column already parsed. What is not JSON is shown as it is.
 */
export function decodePayload(raw: unknown): unknown {
  try {
    if (raw instanceof Uint8Array) return JSON.parse(utf8.decode(raw));
    if (typeof raw === "string") return JSON.parse(raw);
  } catch {
    return raw instanceof Uint8Array ? `<${raw.byteLength} bytes, not UTF-8 JSON>` : raw;
  }
  return raw;
}

/** A column value fit for JSON and a terminal: times as ISO-8601, bytes as a note, big integers as text. */
export function plain(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`;
  if (typeof value === "bigint") return value.toString();
  return value;
}

function toPeekedRow(spec: InboxDescription, row: RawRow): PeekedRow {
  const columns: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) if (name !== spec.payload?.name) columns[name] = plain(value);
  const id = row[spec.id.name];
  return spec.payload === undefined ? { id: String(id), columns } : { id: String(id), columns, payload: decodePayload(row[spec.payload.name]) };
}

/**
 * The rows of a state, or the dead letters (of every place the table declares), decoded. `all` is
 * every row of the table and then the rows of its dead-letter tables (a dead group's rows are rows of
 * the table already), each marked with the table it is in; at most `limit` rows in all.
 */
export async function peekRows(opened: OpenedDatabase, table: QueueTable, request: PeekRequest): Promise<PeekedRow[]> {
  const ops = operatorFor(opened.engine);
  const { spec } = table;
  const out: PeekedRow[] = [];
  if (request.state !== "dead") {
    const query = ops.peek({ spec, createdAt: table.createdAt }, { ...request, state: request.state });
    out.push(...(await opened.db.executeQuery(query)).rows.map((row) => toPeekedRow(spec, row)));
    if (request.state !== "all") return out;
  }
  for (const place of placesOf(table, request.group)) {
    if (out.length >= request.limit) break;
    if (request.state === "all" && place.kind !== "table") continue;
    const query = ops.peekDeadLetters(spec, place, request.limit - out.length, request.ids);
    const decodeAs = place.kind === "table" ? place.destination : spec;
    const mark = request.state === "all" && place.kind === "table" ? { deadLetterTable: place.destination.table } : {};
    out.push(...(await opened.db.executeQuery(query)).rows.map((row) => ({ ...toPeekedRow(decodeAs, row), ...mark })));
  }
  return out;
}

/** The table's dead-letter places, narrowed to one source group when given. */
export function placesOf(table: QueueTable, group?: string): DeadLetterPlace[] {
  return table.deadLetters.filter((p) => group === undefined || p.kind === "table" || p.group === group);
}
