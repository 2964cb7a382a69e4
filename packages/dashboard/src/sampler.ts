import type { DashboardSource, StatusReport, TableStatus } from "./source.js";

/** One table at one moment, as the charts plot it. */
export interface TableSample {
  readonly ready: number;
  /** Fifo tables: due rows behind their group's head; `null` on other tables. */
  readonly waiting: number | null;
  readonly inWork: number | null;
  readonly delayed: number;
  readonly dead: number | null;
  /** Rows finished per second since the previous sample (an estimate: rows written minus the growth of the backlog). */
  readonly finishedPerSecond: number | null;
  /** Dead letters added per second since the previous sample. */
  readonly failedPerSecond: number | null;
}

export interface Sample {
  /** Milliseconds since the epoch. */
  readonly at: number;
  readonly tables: Readonly<Record<string, TableSample>>;
}

const backlog = (t: TableStatus): number => t.totals.ready + (t.totals.waiting ?? 0) + (t.totals.inWork ?? 0) + t.totals.delayed;

/**
 * One sample from a status read and the one before it. Finished rows are estimated: rows written
 * (the growth of the largest numeric id) minus the growth of the backlog and of the dead letters;
 * `null` on the first read, or where ids are not numbers.
 */
export function sampleOf(report: StatusReport, previous: StatusReport | null): Sample {
  const seconds = previous === null ? 0 : (Date.parse(report.at) - Date.parse(previous.at)) / 1000;
  const tables: Record<string, TableSample> = {};
  for (const table of report.tables) {
    const before = previous?.tables.find((t) => t.table === table.table);
    let finished: number | null = null;
    let failed: number | null = null;
    if (before !== undefined && seconds > 0) {
      const deadNow = table.totals.dead ?? 0;
      const deadBefore = before.totals.dead ?? 0;
      failed = Math.max(0, deadNow - deadBefore) / seconds;
      if (table.newestId !== null && before.newestId !== null) {
        const written = Math.max(0, table.newestId - before.newestId);
        finished = Math.max(0, written - (backlog(table) - backlog(before)) - Math.max(0, deadNow - deadBefore)) / seconds;
      }
    }
    tables[table.table] = {
      ready: table.totals.ready,
      waiting: table.totals.waiting,
      inWork: table.totals.inWork,
      delayed: table.totals.delayed,
      dead: table.totals.dead,
      finishedPerSecond: finished,
      failedPerSecond: failed,
    };
  }
  return { at: Date.parse(report.at), tables };
}

/**
 * Reads the status every `everyMs` while the dashboard runs and keeps the samples of the last
 * `keepMs`: the charts' history lives here, in memory, from the moment the dashboard started.
 */
export class Sampler {
  readonly #samples: Sample[] = [];
  #previous: StatusReport | null = null;
  #latest: StatusReport | null = null;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | null = null;

  constructor(
    private readonly source: DashboardSource,
    private readonly everyMs: number,
    private readonly keepMs: number = 15 * 60_000,
  ) {}

  start(): void {
    void this.sampleNow();
    this.#timer = setInterval(() => void this.sampleNow(), this.everyMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  get samples(): readonly Sample[] {
    return this.#samples;
  }

  /** The newest status read, or a fresh read when none is there yet. */
  async latest(): Promise<StatusReport> {
    if (this.#latest === null) await this.sampleNow();
    return this.#latest!;
  }

  /** Takes one sample now (one at a time: a slow database does not pile reads up). */
  sampleNow(): Promise<void> {
    this.#running ??= this.#take().finally(() => (this.#running = null));
    return this.#running;
  }

  async #take(): Promise<void> {
    let report: StatusReport;
    try {
      report = await this.source.status();
    } catch {
      return; // a failed read leaves a gap in the charts; the page shows the error from /api/status
    }
    const sample = sampleOf(report, this.#previous);
    this.#previous = report;
    this.#latest = report;
    this.#samples.push(sample);
    const oldest = Date.now() - this.keepMs;
    while (this.#samples.length > 0 && this.#samples[0]!.at < oldest) this.#samples.shift();
  }
}
