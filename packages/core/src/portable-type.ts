import { SqlInboxError } from "./errors.js";

/**
 * The column types a description may give a column the application fills (a data column, an
 * id the application chooses), in words every engine understands. Each engine's
 * `table-types.ts` in `@sqlinbox/kysely-dialects` says what each becomes there
 * (`timestamp`: `TIMESTAMPTZ`, `DATETIME(3)`, `TEXT`; `bytes`: `BYTEA`, `LONGBLOB`, `BLOB` …).
 */
export const PORTABLE_TYPES = Object.freeze(["text", "bigint", "integer", "double", "boolean", "timestamp", "json", "bytes"] as const);

/** One of `PORTABLE_TYPES`: `field.data("customer_id").holds<number>().type("bigint")`. */
export type PortableType = (typeof PORTABLE_TYPES)[number];

/** Refuses a type that is not portable (a description may come from JavaScript). */
export function validatePortableType(type: unknown, column: string): PortableType {
  if (typeof type === "string" && (PORTABLE_TYPES as readonly string[]).includes(type)) return type as PortableType;
  throw new SqlInboxError("Declaration", `column "${column}" has the type ${JSON.stringify(type)}, which is not portable: use one of ${PORTABLE_TYPES.join(", ")}`, { column });
}
