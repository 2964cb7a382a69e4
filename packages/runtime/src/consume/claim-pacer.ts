/**
 * Claims ahead of the workers: how many rows to claim now (`rowsToClaim`, sized from measured claim
 * latency by `claimsToCover`), and the rows so claimed, waiting in claim order for a free worker
 * (`DeliveryBuffer`, whose size the pacer reads).
 */
import type { ClaimedDelivery } from "../claim/claim-strategy.js";

/** Claims in flight at least, where rows wait at no cost: the next batch is claimed while the last one runs. */
export const MIN_CLAIMS_AHEAD = 2;
/**
 * Claims in flight at most where rows wait at no cost, however fast handlers are, where claims do
 * not contend (`PaceShape.contend`; MySQL/MariaDB's claim of two statements, whose latency more
 * claims hide). Where they contend (Postgres) the minimum stays.
 */
export const MAX_CLAIMS_AHEAD = 4;
/**
 * Rows claims in flight may bring at most, beyond the minimum: past it, more claims side by side
 * cost more (a larger buffer, longer statements) than the latency they hide.
 */
const MAX_ROWS_AHEAD = 512;
/** Below this a handler is taken to cost this much (a no-op handler still decodes its payload). */
const MIN_HANDLER_MS = 0.002;

/**
 * What the pacer reads: a subscription's shape (fixed at start) and its counters (updated in
 * place, one object per subscription, so the hot path allocates nothing to ask).
 */
export interface ClaimPace {
  readonly workers: number;
  /** Rows per claim statement at most (`batch(n)`). */
  readonly batch: number;
  /** Claims in flight at most while the queue is not drained. */
  readonly maxClaims: number;
  /**
   * Where rows wait at no cost (the lease form), and for shared row-lock claims (at most `workers`):
   * the claims to keep in flight so that rows arrive before the workers run out, sized from
   * measured claim latency and handler time (`claimsToCover`).
   */
  aheadClaims: number;
  /** Settlements in flight beyond which no claim starts (memory stays bounded when the database is slow). */
  readonly maxSettling: number;
  /** How claims are paced: the claim form's profile, or `wholeBatches` for a batch handler. */
  readonly mode: PaceMode;
  /** Claim latency and handler time are measured and size `aheadClaims` (claims ahead or shared claims, with several workers). */
  readonly measures: boolean;
  /** Measured claim latency, a moving average in ms (0 until measured). */
  claimMs: number;
  /** Shared claims: transactions that claimed rows and are still open (each holds a connection until its last row settled). */
  heldTransactions: number;
  /** Deliveries (batches, for a batch handler) whose handler runs (or, holding a connection, whose settlement runs). */
  inFlight: number;
  /** Claimed ahead, not started yet. */
  buffered: number;
  /** Claim statements running. */
  claims: number;
  /** Rows the running claims may still bring (their limits). */
  claiming: number;
  /** Settlements being written (the subscription's `DeliveryRun` counts them). */
  settling: number;
  /** The last claim came back short: one claim at a time until one comes back full (a wake needs one statement, not one per worker). */
  drained: boolean;
}

/**
 * How a subscription's claims are paced, one mode per claim form's way of holding rows:
 *
 * - `ahead`: claimed rows cost nothing while they wait (the lease form): claim whole batches ahead and buffer them;
 * - `oneRow`: each claim takes one row, in a transaction of its own (the row-lock form);
 * - `shared`: a claim takes a whole batch in one transaction, whose rows wait in the buffer for the workers; the
 *   transactions open stay within `workers` (row lock with `.sharedTransaction()`);
 * - `perWorker`: a claimed row holds a connection at once: never more rows than free workers (the advisory form);
 * - `wholeBatches`: a batch handler, whatever the form: each claim is one handler call; `workers` and `inFlight` count batches.
 */
type PaceMode = "ahead" | "oneRow" | "shared" | "perWorker" | "wholeBatches";

/** The shape a subscription paces by. */
export interface PaceShape {
  readonly workers: number;
  readonly batch: number;
  readonly mode: PaceMode;
  /** Claims side by side hide latency on this database (not a single writer such as SQLite). */
  readonly sideBySide?: boolean;
  /** Claims side by side cost the server more per row than the latency they hide: claims ahead stay at the minimum. */
  readonly contend?: boolean;
}

/** A subscription's pacing state at start: drained (one claim first), nothing in flight. */
export function claimPaceFor(shape: PaceShape): ClaimPace {
  const { workers, batch, mode } = shape;
  return {
    workers,
    batch,
    mode,
    // A single-writer engine (SQLite) runs one statement at a time: claims side by side hide no latency there.
    // One worker keeps one claim at a time, so its rows run in claim order (claims side by side may take rows out of order).
    // Where claims contend (Postgres's one-statement lease claim), the minimum stays: nothing to measure.
    measures: ((mode === "ahead" && shape.sideBySide === true && shape.contend !== true) || mode === "shared") && workers > 1,
    claimMs: 0,
    maxClaims: maxClaimsOf(shape),
    aheadClaims: MIN_CLAIMS_AHEAD,
    // Shared claims: the open transactions (at most `workers`) bound the rows settling; each writes its rows' settlements
    // one after another on its connection, so up to `workers` of them write side by side, as `workers` raw loops do.
    maxSettling: Math.max(4 * Math.max(batch, workers), mode === "shared" ? workers * batch : 0),
    inFlight: 0,
    buffered: 0,
    claims: 0,
    claiming: 0,
    settling: 0,
    heldTransactions: 0,
    drained: true,
  };
}

/** Claims in flight at most while the queue is not drained, before measured latency raises `ahead` and `shared`. */
function maxClaimsOf({ workers, batch, mode }: PaceShape): number {
  switch (mode) {
    // A row-lock claim opens one transaction per row, one after another: with several free workers, claims of one
    // row each run side by side instead of making the last worker wait for the others. A batch handler: one claim
    // per free worker, each a whole batch.
    case "oneRow":
    case "wholeBatches":
      return workers;
    // The next batch is claimed while the last one runs (one connection each); `aheadClaims` raises it once claim latency is measured.
    case "shared":
      return Math.min(workers, MIN_CLAIMS_AHEAD);
    // batch(1).workers(8) claims in up to 8 statements at once, as 8 separate consumers would.
    case "ahead":
      return Math.max(MIN_CLAIMS_AHEAD, Math.ceil(workers / batch));
    // An advisory claim shares one candidate select among its rows, and claims side by side would contend for the same keys.
    case "perWorker":
      return Math.max(1, Math.ceil(workers / batch));
    default:
      return unknownMode(mode);
  }
}

function unknownMode(mode: never): never {
  throw new Error(`unknown pace mode ${String(mode)}`);
}

/**
 * How many rows to claim now; 0: no claim now. Called again after each claim it starts (with
 * `claims` and `claiming` counted), until it says 0.
 */
export function rowsToClaim(pace: ClaimPace): number {
  const { workers, batch, inFlight, mode } = pace;
  // Claims ahead and shared claims are sized from measured latency; a shared claim is a transaction, one of the workers' connections.
  const maxClaims =
    mode === "ahead" ? Math.max(pace.maxClaims, pace.aheadClaims) : mode === "shared" ? Math.max(pace.maxClaims, Math.min(workers, pace.aheadClaims)) : pace.maxClaims;
  if (pace.claims >= (pace.drained ? 1 : maxClaims) || pace.settling >= pace.maxSettling) return 0;
  switch (mode) {
    // A free worker takes a whole batch in one claim, nothing is buffered.
    case "wholeBatches":
      return workers - inFlight - pace.claims > 0 ? batch : 0;
    case "ahead": {
      // Claim a whole batch when a worker is free that neither the buffer nor a running claim will feed,
      // or, while a worker is between deliveries, when fewer rows are on hand or coming than the
      // workers run through while a claim is under way (`aheadClaims - 1` batches; one at the least),
      // so the next batch arrives while the buffer's last rows run, instead of after them.
      const uncovered = workers - inFlight - pace.buffered - pace.claims;
      const refill = inFlight < workers && pace.buffered + pace.claiming < batch * Math.max(1, pace.aheadClaims - 1);
      return uncovered <= 0 && !refill ? 0 : batch;
    }
    case "shared": {
      // One connection per open transaction, and the pool budget counts one per worker: a claim (its own
      // transaction) starts only below that. Then a whole batch, when a worker is free that neither the
      // buffer nor a running claim will feed, or when fewer rows are on hand or coming than the workers run
      // through while a claim is under way (`aheadClaims - 1` batches, one at the least), as claims ahead do.
      if (pace.heldTransactions + pace.claims >= workers) return 0;
      const uncovered = workers - inFlight - pace.buffered - pace.claiming;
      const refill = inFlight < workers && pace.buffered + pace.claiming < batch * Math.max(1, pace.aheadClaims - 1);
      return uncovered <= 0 && !refill ? 0 : batch;
    }
    // A claimed row holds a connection at once: never claim more than there are free workers.
    case "oneRow":
    case "perWorker": {
      const free = workers - inFlight - pace.claiming;
      if (free <= 0) return 0;
      return mode === "oneRow" ? 1 : Math.min(batch, free);
    }
    default:
      return unknownMode(mode);
  }
}

/**
 * The claims to keep in flight where rows wait at no cost: enough batches to cover the rows the
 * workers run through while one claim is under way (`claimMs` of latency, each row `handlerMs`
 * on one of `workers`), plus the one being used; between `MIN_CLAIMS_AHEAD` and `MAX_CLAIMS_AHEAD`,
 * and no more than `MAX_ROWS_AHEAD` rows' worth of claims (batch 64: up to 4 claims; batch 500: the minimum).
 * Slow handlers keep the minimum; fast handlers behind a slow claim (a round trip and a commit's
 * fsync) get more claims side by side, which the database commits together.
 */
export function claimsToCover(claimMs: number, handlerMs: number, workers: number, batch: number): number {
  if (!(claimMs > 0)) return MIN_CLAIMS_AHEAD;
  const rowsWhileClaiming = (claimMs * workers) / Math.max(handlerMs, MIN_HANDLER_MS);
  const claims = Math.ceil(rowsWhileClaiming / batch) + 1;
  const cap = Math.max(MIN_CLAIMS_AHEAD, Math.min(MAX_CLAIMS_AHEAD, Math.floor(MAX_ROWS_AHEAD / batch)));
  return Math.min(cap, Math.max(MIN_CLAIMS_AHEAD, claims));
}

/** A claim's latency was measured: the claims kept in flight follow it, once a handler's time is known too. */
export function claimMeasured(pace: ClaimPace, claimMs: number, handlerMs: number): void {
  pace.claimMs = movingAverage(pace.claimMs, claimMs);
  if (handlerMs > 0) pace.aheadClaims = claimsToCover(pace.claimMs, handlerMs, pace.workers, pace.batch);
}

/** An exponential moving average (weight 1/5 on the new sample); the first sample stands alone. */
export function movingAverage(average: number, sample: number): number {
  return average === 0 ? sample : average + (sample - average) / 5;
}

/**
 * Rows claimed ahead of the workers, in claim order, until a worker takes them. Kept as an array
 * and a read index, so taking one allocates nothing; the array is dropped once read through.
 */
export class DeliveryBuffer {
  /** A worker is free to take a row now. */
  readonly #free: () => boolean;
  /** Starts a row on a free worker. */
  readonly #start: (delivery: ClaimedDelivery) => void;
  #rows: ClaimedDelivery[] = [];
  #at = 0;
  /** `pump` is handing rows out (a synchronous handler's end pumps again: the running loop takes it). */
  #pumping = false;

  constructor(free: () => boolean, start: (delivery: ClaimedDelivery) => void) {
    this.#free = free;
    this.#start = start;
  }

  /** Rows waiting for a worker. */
  get size(): number {
    return this.#rows.length - this.#at;
  }

  /** Adds a claim's rows behind those waiting. */
  add(claimed: ClaimedDelivery[]): void {
    if (this.size === 0) {
      this.#rows = claimed;
      this.#at = 0;
    } else {
      for (const delivery of claimed) this.#rows.push(delivery);
    }
  }

  /** Hands waiting rows to free workers. */
  pump(): void {
    // A handler that returns without a promise finishes inside `start`, which pumps again: the loop below goes on instead.
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#at < this.#rows.length && this.#free()) this.#start(this.#rows[this.#at++] as ClaimedDelivery);
      if (this.#at === this.#rows.length && this.#at > 0) {
        this.#rows = [];
        this.#at = 0;
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Empties the buffer, returning the rows that never started (a stop). */
  takeAll(): ClaimedDelivery[] {
    const left = this.#rows.slice(this.#at);
    this.#rows = [];
    this.#at = 0;
    return left;
  }
}
