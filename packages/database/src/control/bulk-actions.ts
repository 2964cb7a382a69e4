import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import { CANCEL_REQUEST_TTL_MS, cancelRow, notifyControl, onControl, updateRow, type ControlPlace } from "./control-procedures.js";
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
 * Runs `request.action` on the rows `ids`, a batch (`batch`, 500) at a time, each row fenced as the
 * single-row procedures fence it, and counts what happened. A batch is one statement where the
 * fence is in it: the lease form's live lease is in the statement's condition. The row-lock form locks
 * the batch with one `FOR UPDATE SKIP LOCKED` in a transaction (the rows a claim holds are passed by)
 * and writes the rows it locked, each by its id, in that transaction. The advisory form tries each row's key without waiting,
 * row by row (`cancelRow`, `writeUnlessInWork`, `updateRow`), where keys live in the server.
 *
 * `cancel` writes a cancel request for every row of the batch first (so a claim that takes one
 * meanwhile sees it), removes the rows not in work (on a table that keeps handled rows, marks them
 * processed), withdraws the requests of the rows it removed, and counts the others `signalled`: the
 * process running each aborts its signal. `delete` deletes the rows not in work, without a request.
 * `retry` and `reschedule` write the retryAfter column (now, or `runAt`) of the rows not in work; they
 * need a retryAfter column.
 */
export async function bulkAct(place: ControlPlace, spec: InboxDescription, request: BulkRequest): Promise<BulkCounts> {
  const runAt = request.action === "retry" ? request.now : request.runAt;
  const retryAfter = spec.retryAfter?.name;
  if ((request.action === "retry" || request.action === "reschedule") && retryAfter === undefined) {
    throw new Error(`${request.action} sets the run-at, and table "${spec.table}" has no retryAfter column`);
  }
  if (request.action === "reschedule" && runAt === undefined) throw new Error("reschedule needs the time to run at (runAt)");
  const values = retryAfter === undefined || runAt === undefined ? {} : { [retryAfter]: runAt };
  const byKey = spec.form === "advisory" && place.dialect.capabilities.advisoryLocks === "session";
  const counts = noCounts();
  const size = request.batch ?? BULK_BATCH;
  for (let start = 0; start < request.ids.length; start += size) {
    const ids = request.ids.slice(start, start + size);
    const got = byKey ? await rowByRow(place, spec, request, ids, values) : await inOneGo(place, spec, request, ids, values);
    counts.touched += got.touched;
    counts.signalled += got.signalled;
    counts.inWork += got.inWork;
    counts.notFound += got.notFound;
    request.onBatch?.(counts, Math.min(start + size, request.ids.length), request.ids.length);
  }
  return counts;
}

/** One batch in a few statements: find the rows, (cancel) request, write the rows not in work, find what is left. */
async function inOneGo(place: ControlPlace, spec: InboxDescription, request: BulkRequest, ids: readonly unknown[], values: Record<string, Date>): Promise<BulkCounts> {
  const { db, dialect } = place;
  const control = dialect.control;
  const { action, now, route } = request;
  const counts = noCounts();
  const present = async (of: readonly unknown[]) => new Set((await db.executeQuery(control.findRows(spec, of))).rows.map((r) => String(r[spec.id.name])));
  const found = await present(ids);
  const targets = ids.filter((id) => found.has(String(id)));
  counts.notFound = ids.length - targets.length;
  if (targets.length === 0) return counts;
  if (action === "cancel") {
    await db.transaction().execute(async (trx) => {
      await onControl(place, trx, control.purgeCancels(new Date(now.getTime() - CANCEL_REQUEST_TTL_MS)));
      for (const id of targets) for (const query of control.requestCancel(route, String(id), now)) await onControl(place, trx, query);
    });
  }
  const write = (of: readonly unknown[]): CompiledQuery =>
    action === "cancel" ? control.removeQueuedMany(spec, of, now) : action === "delete" ? control.deleteQueuedMany(spec, of, now) : control.updateQueuedMany(spec, of, values, now);
  const changed = await writeUnlessHeld(place, spec, targets, write);
  const left = await present(targets);
  counts.touched = changed;
  if (action === "cancel") {
    // A row no longer there was removed, or settled meanwhile: either way no process needs its request.
    const gone = targets.filter((id) => !left.has(String(id))).map(String);
    if (gone.length > 0) await db.executeQuery(control.clearCancels(route, gone));
    counts.signalled = left.size;
    if (left.size > 0) await notifyControl(place, db);
    counts.notFound += Math.max(0, targets.length - changed - left.size);
    return counts;
  }
  // Delete: the rows left are in work. Retry, reschedule: the rows changed are still there; the rest are in work, or went meanwhile.
  const inWork = action === "delete" ? left.size : Math.max(0, left.size - changed);
  counts.inWork = inWork;
  counts.notFound += Math.max(0, targets.length - changed - inWork);
  return counts;
}

/**
 * Runs `write` on the rows of `ids` no claim holds; how many it changed. Row lock (where the engine
 * locks rows): in one transaction at the claims' isolation, lock the batch `FOR UPDATE SKIP LOCKED`
 * (a row a claim holds is passed by) and write the rows locked, one statement each. The lease form's fence is in
 * `write`'s condition; SQLite has no row locks, and its advisory keys live in the application's process.
 */
async function writeUnlessHeld(place: ControlPlace, spec: InboxDescription, ids: readonly unknown[], write: (ids: readonly unknown[]) => CompiledQuery): Promise<number> {
  const { db, dialect } = place;
  const affected = (result: QueryResult<unknown>) => Number(result.numAffectedRows ?? 0n);
  if (spec.form === "rowLock" && dialect.capabilities.rowLock) {
    const isolation = dialect.capabilities.claimIsolation;
    const builder = db.transaction();
    return (isolation === undefined ? builder : builder.setIsolationLevel(isolation)).execute(async (trx) => {
      const locked = (await trx.executeQuery(dialect.control.lockQueuedMany(spec, ids))).rows.map((r) => r.id);
      // Each locked row by its id: InnoDB may scan for an `IN` list, and would wait on the rows a claim holds.
      let changed = 0;
      for (const id of locked) changed += affected(await trx.executeQuery(write([id])));
      return changed;
    });
  }
  return affected(await db.executeQuery(write(ids)));
}

/** One batch row by row, through the single-row procedures: the advisory form, whose keys are tried one at a time. */
async function rowByRow(place: ControlPlace, spec: InboxDescription, request: BulkRequest, ids: readonly unknown[], values: Record<string, Date>): Promise<BulkCounts> {
  const { db, dialect } = place;
  const counts = noCounts();
  for (const id of ids) {
    if (request.action === "cancel") {
      const result = await cancelRow(place, spec, request.route, id, request.now);
      if (result === "removed") counts.touched++;
      else if (result === "signalled") counts.signalled++;
      else counts.notFound++;
    } else if (request.action === "delete") {
      const found = async () => (await db.executeQuery(dialect.control.findRow(spec, id))).rows.length > 0;
      if (!(await found())) counts.notFound++;
      else if (await writeUnlessInWork(db, dialect, spec, id, dialect.control.deleteQueued(spec, id, request.now))) counts.touched++;
      else if (await found()) counts.inWork++;
      else counts.notFound++;
    } else {
      const result = await updateRow(db, dialect, spec, id, values, request.now);
      if (result === "updated") counts.touched++;
      else if (result === "running") counts.inWork++;
      else counts.notFound++;
    }
  }
  return counts;
}
