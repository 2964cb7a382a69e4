/**
 * The flow-control tests' queue: one table for every form (id, attempt, a lease column, a
 * retryAfter column, an advisory key `k`, the payload), created by `createInboxTable` together
 * with the slot table, and the arithmetic the tests apply to what the worker processes report.
 */
import { column, InboxSpec, payloadOf, type ClaimForm } from "@sqlinbox/core/internal";
import { createInboxTable } from "../../src/index.js";
import type { AnyKysely } from "../../src/drivers/database.js";
import type { Job, WorkerLine } from "./claim-forms.js";

/** The description of the flow table in `form` (the lease column is described in the lease form only; `k` keys the advisory form). */
export function flowSpecOf(table: string, form: ClaimForm) {
  const base = InboxSpec.table(table, column("id").generated()).attempt(column("attempt").generated()).retryAfter(column("retry_after")).data(column("k").type("text"));
  switch (form) {
    case "lease":
      return base.lease(column("locked_until")).payload(column("payload"), payloadOf<Job>());
    case "advisory":
      return base.advisoryLock("{k}").payload(column("payload"), payloadOf<Job>());
    case "rowLock":
      return base.payload(column("payload"), payloadOf<Job>());
  }
}

/** Creates the table of `form` with every column (the lease column too, for one shape) and the slot table. */
export async function createFlowTable(db: AnyKysely, table: string): Promise<void> {
  await createInboxTable(db, flowSpecOf(table, "lease"), undefined, { slotTable: true });
}

/** A handler's run as its process reported it: from its `start` line to its `done` line (or the process's death). */
export interface Run {
  readonly pid: number;
  readonly start: number;
  readonly end: number;
}

/** The runs of each process's lines; a run with no `done` ends at `endOf(pid)` (its process was killed). */
export function runsOf(processes: ReadonlyArray<{ pid: number; lines: readonly WorkerLine[] }>, endOf: (pid: number) => number): Run[] {
  const runs: Run[] = [];
  for (const { pid, lines } of processes) {
    const started = new Map<number, number>();
    for (const line of lines) {
      if (line.event === "start" && line.id !== undefined) started.set(line.id, line.time);
      if (line.event === "done" && line.id !== undefined) {
        const start = started.get(line.id);
        if (start !== undefined) runs.push({ pid, start, end: line.time });
        started.delete(line.id);
      }
    }
    for (const start of started.values()) runs.push({ pid, start, end: endOf(pid) });
  }
  return runs;
}

/** Runs in work at `t`: started at or before it, not yet done (a run that ends at `t` is over). */
export function inWorkAt(runs: readonly Run[], t: number): number {
  let n = 0;
  for (const r of runs) if (r.start <= t && t < r.end) n++;
  return n;
}

/** The most runs in work at once, sampled every `everyMs` from the first start to the last end. */
export function mostInWork(runs: readonly Run[], everyMs: number): number {
  if (runs.length === 0) return 0;
  const from = Math.min(...runs.map((r) => r.start));
  const to = Math.max(...runs.map((r) => r.end));
  let most = 0;
  for (let t = from; t <= to; t += everyMs) most = Math.max(most, inWorkAt(runs, t));
  // Every start too: the moment a run begins is when the count can first exceed the cap.
  for (const r of runs) most = Math.max(most, inWorkAt(runs, r.start));
  return most;
}

/** The most starts in any window of `windowMs` (each window begins at a start: the busiest window begins at one). */
export function mostStartsInWindow(starts: readonly number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let most = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (j < sorted.length && (sorted[j] as number) < (sorted[i] as number) + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
