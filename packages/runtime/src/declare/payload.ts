import { isStandardSchema, type ErrorPlace, type InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { failsSchema, notEncodable, notSerializable, notUtf8Json } from "../errors.js";

/** How the payload column stores the JSON: bytes in a binary column, text otherwise. */
export type PayloadStorage = "bytes" | "text";

/** Reads the storage from the column's type as the schema check found it. */
export function payloadStorageOf(dataType: string | undefined): PayloadStorage {
  return dataType !== undefined && /blob|bytea|binary/i.test(dataType) ? "bytes" : "text";
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The value a publish writes into the payload column. */
export function encodePayload(payload: unknown, storage: PayloadStorage, place: ErrorPlace = {}): string | Buffer {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload);
  } catch (error) {
    throw notEncodable(error, place);
  }
  if (text === undefined) throw notSerializable(payload, place);
  return storage === "bytes" ? Buffer.from(text, "utf8") : text;
}

/**
 * Decodes a claimed row's payload: UTF-8 JSON from bytes or text, or the value a JSON column
 * already parsed; then the payload's Standard Schema, when the description has one.
 * In row mode (no payload column) the handler receives the row, keyed as described.
 */
export async function decodePayload(spec: InboxDescription, row: RawRow, place: ErrorPlace): Promise<unknown> {
  const value = decodePayloadNow(spec, row, place);
  if (spec.payload === undefined || !isStandardSchema(spec.payloadType)) return value;
  const result = await spec.payloadType["~standard"].validate(value);
  if (result.issues !== undefined) {
    const issues = result.issues.map((i) => i.message).join("; ");
    throw failsSchema(issues, place);
  }
  return result.value;
}

/**
 * The decoding without the Standard Schema step: synchronous, for descriptions without a schema.
 * `place` may be a function of the row's id, called only when the payload cannot be decoded (a delivery's hot path builds no place).
 */
export function decodePayloadNow(spec: InboxDescription, row: RawRow, place: ErrorPlace | ((id: unknown) => ErrorPlace), id?: unknown): unknown {
  if (spec.payload === undefined) {
    return Object.freeze(Object.fromEntries(spec.columns.map((c) => [c.key, row[c.name]])));
  }
  const raw = row[spec.payload.name];
  let value: unknown;
  try {
    if (raw instanceof Uint8Array) value = JSON.parse(utf8.decode(raw));
    else if (typeof raw === "string") value = JSON.parse(raw);
    else if (raw === null || raw === undefined) throw new Error("the payload is NULL");
    else value = raw;
  } catch (error) {
    throw notUtf8Json(error, typeof place === "function" ? place(id) : place);
  }
  return value;
}
