import type { CappedCount, DashboardSource, StatusReport, TableStatus } from "./source.js";

/** One table at one moment, as the charts plot it. */
export interface TableSample {
  readonly ready: number;
  /** Fifo tables: due rows behind their group's head; `null` on other tables. */
  readonly waiting: number | null;
  readonly inWork: number | null;
  readonly delayed: number;
  readonly dead: number | null;
  /** Rows settled per second since the previous sample (`settledPerSecond`); `null` where it cannot be known. */
  readonly finishedPerSecond: number | null;
  /**
   * Rows earlier windows read as settled that the counts since took back, still to be taken off the
   * next windows (a table whose ack deletes rows): a read can see an insert's id and not yet its row,
   * or the reverse, and a window never reads below 0, so the sum over windows stays exact. 0 when none.
   */
  readonly settledOwed?: number;
  /** Why the table's throughput cannot be known (the application writes its ids and the ack deletes rows). */
  readonly finishedUnknown?: string;
  /** Dead letters added per second since the previous sample. */
  readonly failedPerSecond: number | null;
}

export interface Sample {
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** The read the rates are measured from (milliseconds since the epoch; `at` itself on the first): reads closer than half an interval share one. */
  readonly from: number;
  readonly tables: Readonly<Record<string, TableSample>>;
}

/** True when one of `fields` of a large table's read is a lower bound (reached its cap), not a count. */
const atLeast = (t: TableStatus | undefined, fields: readonly CappedCount[]): boolean => t?.capped?.atLeast.some((f) => fields.includes(f)) ?? false;
const BACKLOG: readonly CappedCount[] = ["ready", "waiting", "inWork", "delayed", "dead"];

const backlog = (t: TableStatus): number => t.totals.ready + (t.totals.waiting ?? 0) + (t.totals.inWork ?? 0) + t.totals.delayed;

/**
 * Dead letters an operator moved back into a table (the dashboard's retry) since the previous
 * sample: they are not deliveries, so they must not read as finished rows. `idJump`: how far the
 * id high-water mark moved across the move (read just before and just after it): a dead-letter
 * table's rows go back by an insert, which takes new ids; a dead group's rows go back by an update
 * (0). `null` when it could not be read.
 */
export interface OperatorMoves {
  readonly moved: number;
  readonly idJump: number | null;
}

/** The id high-water mark of a status read's table, when its settled rows are counted by one. */
const highWaterOf = (t: TableStatus | undefined): number | null => (t?.settled.kind === "idHighWater" ? t.settled.highWater : null);

/**
 * Rows settled per second on one table between two reads. A table that keeps processed rows
 * counted them in the window itself (`processed`: rows over the seconds from `since` to `at`).
 * A table whose ack deletes the row: inserted − backlog growth − dead letters added, where
 * inserted is the growth of the id high-water mark less an operator move's jump, plus the rows it
 * moved. `null` on the first read of such a table, across a move whose jump is unknown, and where
 * nothing counts (`unknown`).
 */
function settledPerSecond(
  table: TableStatus,
  before: TableStatus | undefined,
  at: number,
  seconds: number,
  move: OperatorMoves,
  deadAdded: number,
  owed: number,
): { readonly perSecond: number | null; readonly owed: number } {
  const { settled } = table;
  switch (settled.kind) {
    case "processed": {
      const window = (at - Date.parse(settled.since)) / 1000;
      return { perSecond: window > 0 ? settled.rows / window : null, owed: 0 };
    }
    case "idHighWater": {
      const earlier = highWaterOf(before);
      if (before === undefined || earlier === null || seconds <= 0 || move.idJump === null) return { perSecond: null, owed };
      // A backlog counted up to a cap does not tell how much it grew: the rows finished cannot be told from the rows inserted.
      if (atLeast(table, BACKLOG) || atLeast(before, BACKLOG)) return { perSecond: null, owed };
      const inserted = Math.max(0, settled.highWater - earlier - move.idJump) + move.moved;
      // The id and the counts are separate reads: an insert between them reads as rows settled in one
      // window and as backlog grown in the next (a negative window), which pays the first back.
      const rows = inserted - (backlog(table) - backlog(before)) - deadAdded - owed;
      return { perSecond: Math.max(0, rows) / seconds, owed: Math.max(0, -rows) };
    }
    case "unknown":
      return { perSecond: null, owed: 0 };
  }
}

/**
 * One sample from a status read and the one before it: finished rows per `settledPerSecond`;
 * dead letters added are the growth of the dead letters plus those an operator moved out of
 * them, so a retry reads as neither finished nor failed.
 */
export function sampleOf(
  report: StatusReport,
  previous: StatusReport | null,
  moves: ReadonlyMap<string, OperatorMoves> = new Map(),
  owed: ReadonlyMap<string, number> = new Map(),
): Sample {
  const at = Date.parse(report.at);
  const seconds = previous === null ? 0 : (at - Date.parse(previous.at)) / 1000;
  const tables: Record<string, TableSample> = {};
  for (const table of report.tables) {
    const before = previous?.tables.find((t) => t.table === table.table);
    const move = moves.get(table.table) ?? { moved: 0, idJump: 0 };
    const deadCapped = atLeast(table, ["dead"]) || atLeast(before, ["dead"]);
    const deadAdded = before === undefined || seconds <= 0 || deadCapped ? null : Math.max(0, (table.totals.dead ?? 0) - (before.totals.dead ?? 0) + move.moved);
    const finished = settledPerSecond(table, before, at, seconds, move, deadAdded ?? 0, owed.get(table.table) ?? 0);
    tables[table.table] = {
      ready: table.totals.ready,
      waiting: table.totals.waiting,
      inWork: table.totals.inWork,
      delayed: table.totals.delayed,
      dead: table.totals.dead,
      finishedPerSecond: finished.perSecond,
      ...(finished.owed > 0 ? { settledOwed: finished.owed } : {}),
      failedPerSecond: deadAdded === null ? null : deadAdded / seconds,
      ...(table.settled.kind === "unknown"
        ? { finishedUnknown: table.settled.reason }
        : table.settled.kind === "idHighWater" && atLeast(table, BACKLOG)
          ? { finishedUnknown: "a large table whose ack deletes rows: its backlog is counted up to a cap, so its growth, and the rows finished, are unknown" }
          : {}),
    };
  }
  return { at, from: previous === null ? at : Date.parse(previous.at), tables };
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
  /** Rows the windows up to `#previous` read as settled too many, per table (`TableSample.settledOwed`). */
  readonly #owed = new Map<string, number>();
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
      const newestId = async () => highWaterOf((await this.source.status().catch(() => null))?.tables.find((t) => t.table === table));
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
      report = await this.source.status(this.#previous?.at);
    } catch {
      return; // a failed read leaves a gap in the charts; the page shows the error from /api/status
    }
    const sample = sampleOf(report, this.#previous, this.#moves, this.#owed);
    if (this.#previous === null || Date.parse(report.at) - Date.parse(this.#previous.at) >= this.everyMs / 2) {
      this.#previous = report;
      this.#moves.clear();
      this.#owed.clear();
      for (const [table, t] of Object.entries(sample.tables)) if (t.settledOwed !== undefined) this.#owed.set(table, t.settledOwed);
    }
    this.#latest = report;
    this.#samples.push(sample);
    const oldest = Date.now() - this.keepMs;
    while (this.#samples.length > 0 && this.#samples[0]!.at < oldest) this.#samples.shift();
  }
}
