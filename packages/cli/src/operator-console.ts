import type { CancelResult } from "@sqlinbox/database";
import type { BulkJobReport, BulkJobRequest, DashboardSource, PeekedRow, StatusReport } from "@sqlinbox/dashboard";
import type { OpenedDatabase } from "./connect.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { cancelRow, pauseRoute, pausedRoutes, resumeRoute, schedules } from "./inspect/control.js";
import { retryDeadLetters } from "./inspect/dead-letters.js";
import { runBulk } from "./inspect/job-bulk.js";
import { peekRows } from "./inspect/rows.js";
import { SETTLED_WINDOW_MS } from "./inspect/settled.js";
import type { StatusCounting } from "./inspect/capped.js";
import { readTableStatus } from "./inspect/status.js";
import type { QueueTable } from "./queue-tables.js";

/**
 * The operator's view of a database's queue tables: what `status`, `peek` and `retry` read and
 * do, and what the dashboard serves. Holds the connection until `close`.
 */
export class OperatorConsole implements DashboardSource {
  constructor(
    readonly opened: OpenedDatabase,
    readonly tables: readonly QueueTable[],
    readonly expiringWithinMs = 60_000,
    /** When a table counts as large and how far each count reads (`--large-table`, `--count-cap`); the defaults when absent. */
    readonly counting?: StatusCounting,
  ) {}

  /**
   * Every selected table's status at the database's time; processed rows are counted since
   * `settledSince` (an earlier read's `at`), or over the last minute.
   */
  async status(settledSince?: string): Promise<StatusReport> {
    const now = this.opened.now();
    const since = settledSince === undefined ? new Date(now.getTime() - SETTLED_WINDOW_MS) : new Date(settledSince);
    const tables = [];
    for (const table of this.tables)
      tables.push(
        await readTableStatus(this.opened, table, {
          now,
          since,
          expiringWithinMs: this.expiringWithinMs,
          expiringLimit: 20,
          ...(this.counting === undefined ? {} : { counting: this.counting }),
        }),
      );
    const recorded = await schedules(this.opened);
    return {
      at: now.toISOString(),
      engine: this.opened.engine,
      server: this.opened.server,
      tables,
      paused: await pausedRoutes(this.opened),
      ...(recorded === undefined ? {} : { schedules: recorded }),
    };
  }

  pause(route: string): Promise<void> {
    return pauseRoute(this.opened, route);
  }

  resume(route: string): Promise<boolean> {
    return resumeRoute(this.opened, route);
  }

  /** Cancels a row of a selected table; the request names the table, which every subscription of it serves. */
  cancel(table: string, id: string): Promise<CancelResult> {
    return cancelRow(this.opened, this.table(table), table, id);
  }

  /**
   * A bulk action of the dashboard's job browser: `sqlinbox jobs cancel|delete|retry|reschedule`'s
   * own run (`runBulk`). Cancel requests go under the table's name, which every subscription of it
   * serves. What the CLI would refuse (a usage error, a missing control table) comes back `refused`.
   */
  async bulkJobs(request: BulkJobRequest): Promise<BulkJobReport> {
    const { table, action, ids, state, equals, runAt, dryRun } = request;
    try {
      return await runBulk(this.opened, this.table(table), { action, route: table, selection: { ids, state, equals }, runAt, dryRun });
    } catch (error) {
      if (error instanceof CliError && error.exitCode !== ExitCode.failed) return { refused: error.message };
      throw error;
    }
  }

  async deadLetters(table: string, limit: number): Promise<readonly PeekedRow[]> {
    return peekRows(this.opened, this.table(table), { state: "dead", limit, now: this.opened.now() });
  }

  async retryDeadLetters(table: string, ids: readonly string[] | "all", onProgress?: (moved: number, total: number) => void): Promise<{ moved: number }> {
    const moved = await retryDeadLetters(this.opened, this.table(table), { ids, chunk: 1000, onProgress });
    return { moved };
  }

  table(name: string): QueueTable {
    return this.tables.find((t) => t.spec.table === name) ?? fail(`no table "${name}" is selected`);
  }

  close(): Promise<void> {
    return this.opened.close();
  }
}

function fail(message: string): never {
  throw new CliError(ExitCode.nothingMatched, message);
}
