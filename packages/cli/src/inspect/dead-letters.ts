import { operatorFor, type DeadLetterPlace } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import type { QueueTable } from "../queue-tables.js";
import { placesOf } from "./rows.js";

export interface RetryRequest {
  /** The dead letters to move back, or all of them. */
  readonly ids: readonly string[] | "all";
  /** Rows per transaction. */
  readonly chunk: number;
  /** Only the dead letters of this source group. */
  readonly group?: string | undefined;
  /** Called after each committed chunk. */
  readonly onProgress?: (moved: number, total: number) => void;
}

const isDeadlock = (error: unknown): boolean => (error as { errno?: number }).errno === 1213;

/** How many dead letters the request covers (the total of the progress bar). */
export async function countDeadLetters(opened: OpenedDatabase, table: QueueTable, group?: string): Promise<number> {
  const ops = operatorFor(opened.engine);
  let total = 0;
  for (const place of placesOf(table, group)) {
    for (const row of (await opened.db.executeQuery(ops.countDeadLetters(table.spec, place))).rows) total += Number(row.rows ?? 0);
  }
  return total;
}

/**
 * Moves dead letters back into the source, one chunk per transaction: lock the chunk's ids
 * (`FOR UPDATE`), insert into the source and delete from the destination (or set the group
 * back), commit. A crash mid-way leaves every row in exactly one place; chunks already committed
 * stay moved. Stops after the rows counted at the start, so rows dead-lettered meanwhile wait for the next run.
 */
export async function retryDeadLetters(opened: OpenedDatabase, table: QueueTable, request: RetryRequest): Promise<number> {
  const places = placesOf(table, request.group);
  if (places.length === 0) {
    throw new CliError(
      ExitCode.usage,
      `no dead-letter place is declared for "${table.spec.table}": export deadLetters from the module, or give --dead-letter-table / --dead-letter-group`,
    );
  }
  const total = request.ids === "all" ? await countDeadLetters(opened, table, request.group) : request.ids.length;
  let moved = 0;
  request.onProgress?.(0, total);
  for (const place of places) {
    const pending = request.ids === "all" ? undefined : request.ids.map(String);
    for (;;) {
      const left = total - moved;
      if (left <= 0) break;
      const done = await moveChunk(opened, table, place, Math.min(request.chunk, left), pending);
      if (done === 0) break;
      moved += done;
      request.onProgress?.(moved, total);
      if (pending !== undefined) break; // the named ids went in one chunk
    }
  }
  return moved;
}

async function moveChunk(opened: OpenedDatabase, table: QueueTable, place: DeadLetterPlace, limit: number, ids?: readonly string[]): Promise<number> {
  const ops = operatorFor(opened.engine);
  for (let attempt = 0; ; attempt++) {
    try {
      return await opened.db.transaction().execute(async (trx) => {
        const locked = (await trx.executeQuery(ops.lockDeadLetterIds(table.spec, place, ids?.length ?? limit, ids))).rows.map((r) => r.id);
        for (const query of ops.retryDeadLetters(table.spec, place, locked)) await trx.executeQuery(query);
        return locked.length;
      });
    } catch (error) {
      // InnoDB may pick this transaction as a deadlock victim beside a running worker: the whole chunk rolled back, so run it again.
      if (isDeadlock(error) && attempt < 10) continue;
      throw new CliError(ExitCode.failed, `retrying dead letters of "${table.spec.table}" failed (the chunk rolled back; earlier chunks stay moved): ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}
