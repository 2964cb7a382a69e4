import type { InboxDescription } from "@sqlinbox/core/internal";
import { cancelRow, updateRow, type ControlPlace } from "./control-procedures.js";
import { writeUnlessInWork } from "./remove-unless-in-work.js";

/** What a bulk action does to each row: cancel (remove, or signal one in work), delete, retry (due now), reschedule (run at a time). */
export type BulkAction = "cancel" | "delete" | "retry" | "reschedule";

/**
 * What a bulk action did, row by row: `touched` rows it changed (removed, deleted, made due, moved);
 * `signalled` rows in work whose cancel request was written (cancel only: the process running
 * each aborts its signal); `inWork` rows left alone because a claim holds them; `notFound` ids with
 * no row (or a done one).
 */
export interface BulkCounts {
  touched: number;
  signalled: number;
  inWork: number;
  notFound: number;
}

/** A bulk action on the rows `ids` of `spec`'s table. */
export interface BulkRequest {
  readonly action: BulkAction;
  /** The name cancel requests go under: a route, or the table's name (every subscription of it serves it). */
  readonly route: string;
  readonly ids: readonly unknown[];
  /** The database's time: a lease is live while its deadline is ahead of it. */
  readonly now: Date;
  /** `reschedule`: the time the rows run at (`retry`: `now`). */
  readonly runAt?: Date;
  /** Rows per batch (500): `onBatch` is called after each. */
  readonly batch?: number;
  readonly onBatch?: (counts: Readonly<BulkCounts>, done: number, total: number) => void;
}

/** The ids of a bulk action go in batches of this many. */
export const BULK_BATCH = 500;

/** Zero counts, to add a run's to. */
export function noCounts(): BulkCounts {
  return { touched: 0, signalled: 0, inWork: 0, notFound: 0 };
}

/**
 * Runs `request.action` on each row, fenced as the single-row procedures are: `cancel` is
 * `cancelRow` (the request written, the row removed unless in work, else signalled); `delete`
 * deletes the row unless in work (`writeUnlessInWork`: a live lease in the statement's condition, a
 * claim's row lock passed by with `SKIP LOCKED`, an advisory key tried without waiting), without a
 * cancel request; `retry` and `reschedule` are `updateRow` on the retryAfter column (now, or
 * `runAt`). A row in work is left as it is and counted. Each row is its own statement (or its own
 * short transaction on the row-lock form), so a row that a claim takes meanwhile is judged at its
 * turn; the ids go in batches of `batch`. Retry and reschedule need a retryAfter column.
 */
export async function bulkAct(place: ControlPlace, spec: InboxDescription, request: BulkRequest): Promise<BulkCounts> {
  const { db, dialect } = place;
  const counts = noCounts();
  const runAt = request.action === "retry" ? request.now : request.runAt;
  const retryAfter = spec.retryAfter?.name;
  if ((request.action === "retry" || request.action === "reschedule") && retryAfter === undefined) {
    throw new Error(`${request.action} sets the run-at, and table "${spec.table}" has no retryAfter column`);
  }
  if (request.action === "reschedule" && runAt === undefined) throw new Error("reschedule needs the time to run at (runAt)");
  const size = request.batch ?? BULK_BATCH;
  for (let start = 0; start < request.ids.length; start += size) {
    for (const id of request.ids.slice(start, start + size)) {
      switch (request.action) {
        case "cancel": {
          const result = await cancelRow(place, spec, request.route, id, request.now);
          if (result === "removed") counts.touched++;
          else if (result === "signalled") counts.signalled++;
          else counts.notFound++;
          break;
        }
        case "delete": {
          const found = async () => (await db.executeQuery(dialect.control.findRow(spec, id))).rows.length > 0;
          if (!(await found())) counts.notFound++;
          else if (await writeUnlessInWork(db, dialect, spec, id, dialect.control.deleteQueued(spec, id, request.now))) counts.touched++;
          else if (await found()) counts.inWork++;
          else counts.notFound++;
          break;
        }
        case "retry":
        case "reschedule": {
          const result = await updateRow(db, dialect, spec, id, { [retryAfter as string]: runAt as Date }, request.now);
          if (result === "updated") counts.touched++;
          else if (result === "running") counts.inWork++;
          else counts.notFound++;
          break;
        }
      }
    }
    request.onBatch?.(counts, Math.min(start + size, request.ids.length), request.ids.length);
  }
  return counts;
}
