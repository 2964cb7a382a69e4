import { BULK_BATCH, bulkAct, noCounts, type BulkAction, type BulkCounts } from "@sqlinbox/database";
import { dialectFor } from "@sqlinbox/kysely-dialects/internal";
import { operatorFor } from "@sqlinbox/kysely-dialects/operator";
import type { OpenedDatabase } from "../connect.js";
import { CliError, ExitCode } from "../exit-codes.js";
import type { QueueTable } from "../queue-tables.js";
import { controlPlace } from "./control.js";
import { retryDeadLetters } from "./dead-letters.js";
import { deadLetterPlace, listJobs, type JobState } from "./job-list.js";

/** Which rows a bulk action takes: named ids (of dead letters with `state` `deadLettered`), or every row in a state matching the equalities. */
export interface BulkSelection {
  readonly ids?: readonly string[] | undefined;
  readonly state?: Exclude<JobState, "all" | "done"> | undefined;
  readonly equals: Readonly<Record<string, unknown>>;
}

export interface BulkRun {
  readonly action: BulkAction;
  /** The name cancel requests go under: the route given, or the table's name. */
  readonly route: string;
  readonly selection: BulkSelection;
  /** `reschedule`: when the rows run. */
  readonly runAt?: Date | undefined;
  /** Count the rows the action would take, and change nothing. */
  readonly dryRun: boolean;
}

/** What a run did, or (`dryRun`) would take: `matched` rows selected; the counts when it ran. */
export interface BulkReport {
  readonly matched: number;
  readonly counts?: BulkCounts;
}

const usage = (message: string): never => {
  throw new CliError(ExitCode.usage, message);
};

/** The selected ids a page at a time (`BULK_BATCH`), keyset paged by id; named ids in batches of that size. */
async function* batches(opened: OpenedDatabase, table: QueueTable, selection: BulkSelection): AsyncGenerator<string[]> {
  if (selection.ids !== undefined) {
    for (let i = 0; i < selection.ids.length; i += BULK_BATCH) yield selection.ids.slice(i, i + BULK_BATCH);
    return;
  }
  let after: string | undefined;
  for (;;) {
    const page = await listJobs(opened, table, { state: selection.state!, equals: selection.equals, after, limit: BULK_BATCH });
    if (page.rows.length > 0) yield page.rows.map((r) => r.id);
    if (page.next === null) return;
    after = page.next;
  }
}

/** Of named ids, how many are rows of the table not done (or, of dead letters, in the dead-letter place). */
async function countNamed(opened: OpenedDatabase, table: QueueTable, ids: readonly string[], dead: boolean): Promise<number> {
  const ops = operatorFor(opened.engine);
  const { spec } = table;
  if (dead) return (await opened.db.executeQuery(ops.peekDeadLetters(spec, deadLetterPlace(table), ids.length, ids))).rows.length;
  const control = dialectFor(opened.engine).control;
  let found = 0;
  for (const id of ids) if ((await opened.db.executeQuery(control.findRow(spec, id))).rows.length > 0) found++;
  return found;
}

/**
 * Runs a bulk action (or counts what it would take, `dryRun`). Rows of the table go through
 * `bulkAct` (`@sqlinbox/database`), each fenced as `sqlinbox cancel` fences one: a row in work is
 * left alone (a cancel signals it). Dead letters (`state` `deadLettered`) are moved back by `retry`
 * as `sqlinbox retry` moves them, or deleted by `delete`; the other actions refuse them.
 */
export async function runBulk(opened: OpenedDatabase, table: QueueTable, run: BulkRun): Promise<BulkReport> {
  const { spec } = table;
  const dead = run.selection.state === "deadLettered";
  if (dead && run.action !== "retry" && run.action !== "delete") {
    usage(`jobs ${run.action} does not take dead letters: retry moves them back, delete removes them`);
  }
  if (!dead && (run.action === "retry" || run.action === "reschedule") && spec.retryAfter === undefined) {
    usage(`jobs ${run.action} sets a row's run-at, and table "${spec.table}" has no retryAfter column`);
  }
  if (dead) deadLetterPlace(table);
  if (run.dryRun) {
    let matched = 0;
    for await (const ids of batches(opened, table, run.selection)) matched += run.selection.ids === undefined ? ids.length : await countNamed(opened, table, ids, dead);
    return { matched };
  }
  const counts = noCounts();
  let matched = 0;
  for await (const ids of batches(opened, table, run.selection)) {
    matched += ids.length;
    if (dead) {
      const done = run.action === "retry" ? await retryDeadLetters(opened, table, { ids, chunk: BULK_BATCH }) : await deleteDeadLetters(opened, table, ids);
      counts.touched += done;
      counts.notFound += ids.length - done;
      continue;
    }
    let got: BulkCounts;
    try {
      got = await bulkAct(controlPlace(opened), spec, { action: run.action, route: run.route, ids, now: opened.now(), runAt: run.runAt });
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw new CliError(ExitCode.failed, `jobs ${run.action} on "${spec.table}" failed part way (rows before stay changed): ${(error as Error).message}`, { cause: error });
    }
    counts.touched += got.touched;
    counts.signalled += got.signalled;
    counts.inWork += got.inWork;
    counts.notFound += got.notFound;
  }
  return { matched, counts };
}

/** Deletes the named dead letters from the table's dead-letter place, as `purge --state dead --id` does; how many went. */
async function deleteDeadLetters(opened: OpenedDatabase, table: QueueTable, ids: readonly string[]): Promise<number> {
  const query = operatorFor(opened.engine).purgeDeadLetters(table.spec, deadLetterPlace(table), ids);
  try {
    return Number((await opened.db.executeQuery(query)).numAffectedRows ?? 0n);
  } catch (error) {
    throw new CliError(ExitCode.failed, `deleting dead letters of "${table.spec.table}" failed (earlier batches stay deleted): ${(error as Error).message}`, { cause: error });
  }
}
