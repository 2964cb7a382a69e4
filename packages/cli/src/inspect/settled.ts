import { operatorFor } from "@sqlinbox/kysely-dialects/operator";
import type { SettledCount } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "../connect.js";
import type { QueueTable } from "../queue-tables.js";

/** The window a status read counts settled rows over when no earlier read is given: the last minute. */
export const SETTLED_WINDOW_MS = 60_000;

/**
 * What a status read tells of the rows settled: on a table that keeps processed rows, how many
 * were processed in `(since, now]` (the database's clock); on a table whose ack deletes the row,
 * the id high-water mark (its growth between two reads is the rows inserted); otherwise unknown.
 */
export async function readSettled(opened: OpenedDatabase, table: QueueTable, since: Date, now: Date): Promise<SettledCount> {
  const ops = operatorFor(opened.engine);
  const { spec } = table;
  if (spec.processedAt !== undefined) {
    const [row] = (await opened.db.executeQuery(ops.countProcessedBetween(spec, since, now))).rows as Record<string, unknown>[];
    return { kind: "processed", since: since.toISOString(), rows: Number(row?.rows ?? 0) };
  }
  if (!spec.id.generated) return { kind: "unknown", reason: "the application writes the ids and the ack deletes the row: nothing counts the rows settled" };
  let row: Record<string, unknown> | undefined;
  try {
    [row] = (await opened.db.executeQuery(ops.idHighWater(spec))).rows as Record<string, unknown>[];
  } catch (error) {
    // A SQLite database without any AUTOINCREMENT table has no sqlite_sequence to read: no counter.
    if (!String(error).includes("sqlite_sequence")) throw error;
  }
  if (row === undefined || !truthy(row.known)) {
    return { kind: "unknown", reason: "the id column has no sequence or auto-increment counter that survives a drained table" };
  }
  return { kind: "idHighWater", highWater: row.high_water === null || row.high_water === undefined ? 0 : Number(row.high_water) };
}

const truthy = (value: unknown): boolean => value === true || Number(value) === 1;
