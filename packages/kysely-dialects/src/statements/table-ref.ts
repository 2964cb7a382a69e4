import type { InboxDescription } from "@sqlinbox/core/internal";

/**
 * The table as statements name it: `schema.table` when the description names a schema (Kysely
 * splits the dot and quotes each part), else the bare name, so an unqualified table's SQL is unchanged.
 */
export function tableRef(spec: InboxDescription): string {
  return spec.schema === undefined ? spec.table : `${spec.schema}.${spec.table}`;
}

/** `table.column`, quoted by Kysely as two identifiers. */
export const col = (spec: InboxDescription, name: string): string => `${tableRef(spec)}.${name}`;
