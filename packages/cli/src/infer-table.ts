import { buildDescription, type ColumnDescription, type ColumnRole, type InboxDescription } from "@sqlinbox/core/internal";
import type { FoundColumn } from "@sqlinbox/kysely-dialects";

/**
 * The column names that give a role when a table is named with `--table` instead of described.
 * The first name the table has wins; every other column is data.
 */
export const ROLE_CONVENTIONS: ReadonlyArray<readonly [ColumnRole, readonly string[]]> = Object.freeze([
  ["id", ["id"]],
  ["attempt", ["attempt", "attempts", "attempt_count"]],
  ["lease", ["locked_until", "lease_until", "leased_until", "lease_expires_at"]],
  ["payload", ["payload", "body"]],
  ["retryAfter", ["retry_after", "run_after", "not_before", "available_at"]],
  ["processedAt", ["processed_at", "done_at", "completed_at"]],
  ["priority", ["priority"]],
  ["group", ["grp", "group", "group_name", "queue_name"]],
]);

/** The names of a column that says when a row was written, for the oldest age. */
export const CREATED_AT_NAMES: readonly string[] = Object.freeze(["created_at", "enqueued_at", "inserted_at", "published_at"]);

/**
 * Describes a table from its real columns by the conventions above. The id is taken as generated
 * (an identity or auto-increment), so a retried dead letter gets a new one. An advisory key
 * template cannot be read from a schema: give it (`--advisory-key "report-{customer_id}"`); nor can
 * fifo (`--fifo`: the group column's rows are claimed one at a time, in order).
 */
export function inferDescription(table: string, found: readonly FoundColumn[], advisoryKey?: string, fifo = false): InboxDescription {
  const names = found.map((c) => c.name);
  const lower = new Map(names.map((n) => [n.toLowerCase(), n]));
  const taken = new Map<string, ColumnRole>();
  for (const [role, candidates] of ROLE_CONVENTIONS) {
    const name = candidates.map((c) => lower.get(c)).find((n) => n !== undefined && !taken.has(n));
    if (name !== undefined) taken.set(name, role);
  }
  const columns: ColumnDescription[] = names
    .filter((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n))
    .map((name) => {
      const role = taken.get(name) ?? "data";
      return { name, key: name, role, generated: role === "id" };
    });
  return buildDescription({ table, columns, advisoryLock: advisoryKey, fifo });
}

/** The created-at column a table has, if any. */
export function createdAtColumn(found: readonly FoundColumn[]): string | undefined {
  const lower = new Map(found.map((c) => [c.name.toLowerCase(), c.name]));
  return CREATED_AT_NAMES.map((n) => lower.get(n)).find((n) => n !== undefined);
}
