import type { InboxDescription } from "@sqlinbox/core/internal";
import type { Clock, Timer } from "../clock.js";
import type { Database } from "../drivers/database.js";
import type { CalmLogger } from "../calm-logger.js";
import { errorFields } from "../logger.js";

/** Rows one prune statement deletes at most: short statements that hold few locks, however large the backlog. */
const PRUNE_BATCH = 500;

/** How often a window is pruned: a quarter of it, at least 250 ms and at most a minute. */
export function pruneInterval(windowMs: number): number {
  return Math.min(60_000, Math.max(250, Math.round(windowMs / 4)));
}

/** What one pruner deletes: rows of `spec`'s table (of `group`, on a group table) handled more than `windowMs` ago. */
export interface PruneTarget {
  readonly spec: InboxDescription;
  readonly group?: string;
  readonly windowMs: number;
  /** What the rows are, for the logs: `done` (handled rows) or `deadLettered` (a dead-letter table). */
  readonly what: "done" | "deadLettered";
}

/** Or: the runs of `workflow` that ended in `state` more than `windowMs` ago, with every row of each (`Workflow.retain`). */
export interface RunPruneTarget {
  readonly workflow: string;
  readonly state: "done" | "cancelled" | "failed";
  readonly windowMs: number;
}

/** Runs one prune statement deletes at most: each is a few rows (its own, its steps', its children's). */
const RUN_PRUNE_BATCH = 100;

/**
 * Deletes one table's rows once they are older than their window, in every app that runs the
 * subscription, with no leader: each run deletes batches of `PRUNE_BATCH` of the oldest rows handled
 * before `now - window` on the broker's clock (the database's time, as the rows' processedAt was
 * written) until a batch comes back short, then sleeps `pruneInterval(window)`. Two apps pruning at
 * once never delete one row twice (a delete of a deleted row affects nothing; on Postgres the pick
 * skips rows the other is deleting) and never touch a row a claim can take (processedAt is set).
 * A failed run is logged and tried again at the next interval.
 */
export class Pruner {
  readonly #target: PruneTarget | RunPruneTarget;
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #logger: CalmLogger;
  readonly #intervalMs: number;
  #timer: Timer | undefined;
  #running: Promise<void> = Promise.resolve();
  #stopped = false;
  /** Rows deleted since the start (what tests and logs read). */
  deleted = 0;

  /** `logger` writes a failure that repeats once, then summaries (an outage fails every run); `stop` closes it. */
  constructor(target: PruneTarget | RunPruneTarget, database: Database, clock: Clock, logger: CalmLogger) {
    this.#target = target;
    this.#database = database;
    this.#clock = clock;
    this.#logger = logger;
    this.#intervalMs = pruneInterval(target.windowMs);
  }

  /** Prunes at once, then every interval until `stop`. */
  start(): void {
    this.#logger.info({ ...this.#fields(), windowMs: this.#target.windowMs, everyMs: this.#intervalMs }, "pruning rows older than the retention window");
    this.#schedule(0);
  }

  /** No more runs; waits for the one in flight (its current batch ends it). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    await this.#running;
    this.#logger.close();
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimer(ms, () => {
      this.#running = this.#run().finally(() => this.#schedule(this.#intervalMs));
    });
  }

  /** What the logs name: the table and the window's kind, or the workflow and the state of its runs. */
  #fields(): Record<string, unknown> {
    const target = this.#target;
    return "spec" in target ? { table: target.spec.table, retain: target.what } : { workflow: target.workflow, retain: target.state };
  }

  async #run(): Promise<void> {
    const target = this.#target;
    const before = new Date(this.#clock.now().getTime() - target.windowMs);
    const { retention, workflow } = this.#database.dialect;
    // A batch of runs deletes at least as many rows as runs: a full batch of rows may be followed by one that finds none.
    const [query, full] =
      "spec" in target
        ? [retention.prune(target.spec, { before, limit: PRUNE_BATCH, ...(target.group !== undefined ? { group: target.group } : {}) }), PRUNE_BATCH]
        : [workflow.pruneRuns({ workflow: target.workflow, state: target.state, before, limit: RUN_PRUNE_BATCH }), RUN_PRUNE_BATCH];
    try {
      let removed = full;
      while (removed >= full && !this.#stopped) {
        // In the engine's claim isolation (READ COMMITTED on MySQL/MariaDB): a batch locks the rows it deletes and no
        // gap, so a publish or an ack never waits on it; a deadlock is retried with the transaction.
        removed = Number((await this.#database.transaction("prune", (trx) => this.#database.execute("prune", query, trx))).numAffectedRows ?? 0n);
        this.deleted += removed;
      }
    } catch (error) {
      this.#logger.warn({ ...errorFields(error), ...this.#fields() }, "pruning failed; trying again at the next interval");
    }
  }
}
