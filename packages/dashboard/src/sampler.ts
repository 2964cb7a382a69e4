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
 * Dead letters an operator moved back into a table (the dashboard's retry) since the previous
 * sample: they are not deliveries, so they must not read as finished rows. `idJump`: how far the
 * newest id moved across the move (read just before and just after it): a dead-letter table's rows
 * go back by an insert, whose ids may skip far past the newest (a sequence skips the ids of
 * inserts rolled back), so the id growth says nothing about rows written; a dead group's rows go
 * back by an update (0). `null` when it could not be read.
 */
export interface OperatorMoves {
  readonly moved: number;
  readonly idJump: number | null;
}

/**
 * One sample from a status read and the one before it. Finished rows are estimated: rows that
 * entered the backlog (the growth of the largest numeric id, without the jump of an operator's
 * move, plus the rows it moved) minus the growth of the backlog and the dead letters added; `null`
 * on the first read, where ids are not numbers, or across a move whose id jump is unknown. Dead
 * letters added are the growth of the dead letters plus those an operator moved out of them, so a
 * retry reads as neither finished nor failed.
 */
export function sampleOf(report: StatusReport, previous: StatusReport | null, moves: ReadonlyMap<string, OperatorMoves> = new Map()): Sample {
  const seconds = previous === null ? 0 : (Date.parse(report.at) - Date.parse(previous.at)) / 1000;
  const tables: Record<string, TableSample> = {};
  for (const table of report.tables) {
    const before = previous?.tables.find((t) => t.table === table.table);
    const move = moves.get(table.table) ?? { moved: 0, idJump: 0 };
    let finished: number | null = null;
    let failed: number | null = null;
    if (before !== undefined && seconds > 0) {
      const deadAdded = Math.max(0, (table.totals.dead ?? 0) - (before.totals.dead ?? 0) + move.moved);
      failed = deadAdded / seconds;
      if (table.newestId !== null && before.newestId !== null && move.idJump !== null) {
        const entered = Math.max(0, table.newestId - before.newestId - move.idJump) + move.moved;
        finished = Math.max(0, entered - (backlog(table) - backlog(before)) - deadAdded) / seconds;
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
  /** The read the rates are measured from: at least half a sampling interval old, so a read asked for right after another does not make a rate out of a few milliseconds. */
  #previous: StatusReport | null = null;
  /** Operator moves since `#previous`. */
  readonly #moves = new Map<string, OperatorMoves>();
  /** Status reads and operator moves run one after the other, so a move falls between two reads, never inside one. */
  #chain: Promise<void> = Promise.resolve();
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
    this.#running ??= this.#serial(() => this.#take()).finally(() => (this.#running = null));
    return this.#running;
  }

  /**
   * Runs an operator's move of dead letters back into `table` between two status reads, and
   * tells the next samples that the rows it moved are neither finished nor failed.
   */
  moveBack<T extends { readonly moved: number }>(table: string, move: () => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      const newestId = async () => (await this.source.status().catch(() => null))?.tables.find((t) => t.table === table)?.newestId ?? null;
      const before = await newestId();
      let moved = 0;
      try {
        const result = await move();
        moved = result.moved;
        return result;
      } finally {
        // Recorded even when the move failed part-way: the chunks committed before it stay moved.
        const after = await newestId();
        const earlier = this.#moves.get(table) ?? { moved: 0, idJump: 0 };
        const jump = before === null || after === null ? null : Math.max(0, after - before);
        this.#moves.set(table, {
          moved: earlier.moved + moved,
          idJump: earlier.idJump === null || jump === null ? null : earlier.idJump + jump,
        });
      }
    });
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(work);
    this.#chain = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async #take(): Promise<void> {
    let report: StatusReport;
    try {
      report = await this.source.status();
    } catch {
      return; // a failed read leaves a gap in the charts; the page shows the error from /api/status
    }
    const sample = sampleOf(report, this.#previous, this.#moves);
    if (this.#previous === null || Date.parse(report.at) - Date.parse(this.#previous.at) >= this.everyMs / 2) {
      this.#previous = report;
      this.#moves.clear();
    }
    this.#latest = report;
    this.#samples.push(sample);
    const oldest = Date.now() - this.keepMs;
    while (this.#samples.length > 0 && this.#samples[0]!.at < oldest) this.#samples.shift();
  }
}
