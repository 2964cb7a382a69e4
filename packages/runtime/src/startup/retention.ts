/**
 * Retention at start-up: a pruner for each window a subscription declares (`InboxQueue.retain`), a
 * warning for each table that keeps its handled rows for ever, and one for each cron whose catch-up
 * reaches further back than the window its table keeps.
 */
import type { AnyWorkflow, InboxDescription } from "@sqlinbox/core/internal";
import type { Clock } from "../clock.js";
import type { Subscriber } from "../declare/subscriber.js";
import type { Database } from "../drivers/database.js";
import { retainNeedsDeadLetterTable } from "../errors.js";
import { calmLogger } from "../calm-logger.js";
import { childLogger, type Logger } from "../logger.js";
import type { CronDeclaration } from "../schedule/cron.js";
import { Pruner } from "../schedule/pruner.js";

/** What one app keeps of each subscribed table: read by the warnings once every broker started. */
export interface KeptRows {
  readonly table: string;
  readonly subscription: string;
  /** The subscription's group, on a group table. */
  readonly group?: string;
  /** The table keeps handled rows (a processedAt column). */
  readonly keepsHandled: boolean;
  /** `retain({ done })`, when declared. */
  readonly doneMs?: number;
}

/** The pruners of one broker's subscriptions; refuses a `deadLettered` window with no dead-letter table declared. */
export function pruners(subscribers: readonly Subscriber[], database: Database, clock: Clock, logger: Logger, kept: KeptRows[]): Pruner[] {
  const built: Pruner[] = [];
  for (const sub of subscribers) {
    const spec = sub.queue.spec.description;
    const { retain, deadLetter } = sub.queue.options;
    const group = spec.group !== undefined ? sub.name : undefined;
    const onGroup = (table: InboxDescription) => (group !== undefined && table.group !== undefined ? { group } : {});
    kept.push({
      table: spec.table,
      subscription: sub.name,
      ...(group !== undefined ? { group } : {}),
      keepsHandled: spec.processedAt !== undefined,
      ...(retain?.done !== undefined ? { doneMs: retain.done } : {}),
    });
    if (retain === undefined) continue;
    const place = { subscription: sub.name, table: spec.table };
    const calm = () => calmLogger(childLogger(logger, { subscription: sub.name }), clock);
    if (retain.done !== undefined) built.push(new Pruner({ spec, windowMs: retain.done, what: "done", ...onGroup(spec) }, database, clock, calm()));
    if (retain.deadLettered !== undefined) {
      // Declared in either order: `deadLetter` and `retain` each check what the other set; only its absence is left to here.
      const target = deadLetter?.target;
      if (target === undefined || !("table" in target)) throw retainNeedsDeadLetterTable(place);
      built.push(new Pruner({ spec: target.table, windowMs: retain.deadLettered, what: "deadLettered", ...onGroup(target.table) }, database, clock, calm()));
    }
  }
  return built;
}

/** The pruners of the finished runs of each workflow that declares a window (`Workflow.retain`), one per run state. */
export function runPruners(workflows: readonly AnyWorkflow[], database: Database, clock: Clock, logger: Logger): Pruner[] {
  const built: Pruner[] = [];
  for (const w of workflows) {
    for (const state of ["done", "cancelled", "failed"] as const) {
      const windowMs = w.retention?.[state];
      if (windowMs === undefined) continue;
      built.push(new Pruner({ workflow: w.name, state, windowMs }, database, clock, calmLogger(childLogger(logger, { workflow: w.name }), clock)));
    }
  }
  return built;
}

/**
 * One warning per table that keeps every handled row for ever (a processedAt table whose
 * subscriptions in this app declare no `done` window), and one per cron whose catch-up needs handled
 * rows older than its table's window keeps.
 */
export function warnRetention(kept: readonly KeptRows[], crons: readonly CronDeclaration[], now: Date, logger: Logger): void {
  const unbounded = new Map<string, string[]>();
  for (const k of kept) {
    if (k.keepsHandled && k.doneMs === undefined) unbounded.set(k.table, [...(unbounded.get(k.table) ?? []), k.subscription]);
  }
  for (const [table, subscriptions] of unbounded) {
    logger.warn(
      { table, subscriptions: subscriptions.join(",") },
      "this table keeps every handled row for ever (processedAt, no retention window): declare retain({ done }) on its queue, or prune it with `sqlinbox purge --older-than`",
    );
  }
  for (const cron of crons) {
    if (cron.catchUp === 0) continue;
    const needed = cron.schedule.catchUpWindow(cron.catchUp, now);
    const window = kept.find((k) => k.table === cron.table && (k.group === undefined || k.group === cron.route) && k.doneMs !== undefined);
    if (window?.doneMs === undefined || window.doneMs >= needed) continue;
    logger.warn(
      { route: cron.route, catchUp: cron.catchUp, retainDoneAtLeastMs: needed, retainDoneMs: window.doneMs, subscription: window.subscription },
      "cron catchUp reaches further back than the table keeps handled rows: a start may publish again a tick whose row was pruned; raise retain({ done }) to at least retainDoneAtLeastMs or lower catchUp",
    );
  }
}
