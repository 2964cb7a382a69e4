import type { InboxDescription } from "@sqlinbox/core/internal";
import type { ClaimedDelivery, ClaimStrategy } from "../claim/claim-strategy.js";
import type { Clock, Timer } from "../clock.js";
import { errorFields, type Logger } from "../logger.js";
import type { HandlerOutcome } from "../declare/outcome.js";
import type { QueueOptions } from "../declare/queue.js";
import type { Outputs, Subscriber } from "../declare/subscriber.js";
import type { Activity } from "../activity.js";
import { claimPaceFor, claimsToCover, rowsToClaim, type ClaimPace } from "./claim-pacer.js";
import { deliverBatch, type BatchRun } from "./batch-delivery.js";
import { DeliveryRun, movingAverage } from "./delivery-run.js";
import type { SubscriptionTelemetry } from "../telemetry/telemetry.js";
import { within, type SubscriptionStop } from "../stop-report.js";

/** What a test sees of each delivery (`TestApp` call records). */
export interface DeliveryObserver {
  delivered(event: { subscription: string; id: unknown; attempt: number | undefined; payload: unknown }): void;
  settled(event: { subscription: string; id: unknown; attempt: number | undefined; payload: unknown; outcome: HandlerOutcome; error?: unknown; signalAborted: boolean }): void;
}

export interface SubscriptionSetup {
  readonly subscriber: Subscriber;
  readonly spec: InboxDescription;
  readonly options: QueueOptions;
  readonly strategy: ClaimStrategy;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly outputs: Outputs;
  readonly activity: Activity;
  /** How long the default decode policy keeps an undecodable row out of claims before it is tried (and logged) again. */
  readonly decodeRetryMs: number;
  readonly observer?: DeliveryObserver | undefined;
  /** Spans and metrics; `undefined` when telemetry is off (one check per delivery). */
  readonly telemetry?: SubscriptionTelemetry | undefined;
}

/**
 * One subscriber consuming its queue: claims while claims come back full, otherwise waits
 * the poll interval (or a wake from a publish in this process); runs up to `workers`
 * handlers at once; settles each by its outcome.
 *
 * Where the claim form lets rows wait at no cost (`claimsAhead`: the lease form), a claim
 * takes up to `batch` rows as soon as a worker is free and the buffer is empty, and workers
 * take from the buffer. There, a handler that returned frees its worker at once; its settlement
 * (an ack joins the next batched statement) finishes on its own, and a stop waits for it.
 * Forms that hold a connection per delivery keep the worker until the settlement released it.
 */
export class Subscription {
  readonly name: string;
  readonly table: string;
  readonly #s: SubscriptionSetup;
  /** Deliveries whose handler runs (or, holding a connection, whose settlement runs). */
  readonly #inFlight = new Set<ClaimedDelivery>();
  /** Waiting for no delivery in work and no settlement. */
  readonly #idle: Array<() => void> = [];
  /** Claim statements running. */
  readonly #claims = new Set<Promise<void>>();
  /** Claimed ahead, not started yet. */
  #buffer: ClaimedDelivery[] = [];
  #bufferAt = 0;
  /** What `rowsToClaim` reads: the shape, the claiming/settling counters, drained; the rest is copied in before each ask. */
  readonly #pace: ClaimPace;
  readonly #place: { readonly subscription: string; readonly table: string };
  /** Each delivery from its row to its settlement. */
  readonly #run: DeliveryRun;
  #started = false;
  #stopped = false;
  /** The stop began: deliveries finishing from now on count in its report. */
  #stopStarted = false;
  #finishedAfterStop = 0;
  /** A claim came back short: no claim until the poll interval passes or a wake. */
  #pollTimer: Timer | undefined;
  /** Counts wakes, so a claim that came back short knows whether a publish happened while it ran. */
  #wakes = 0;
  /** A batch handler's subscription: what each batch delivery needs; batches in work. */
  readonly #batchRun: BatchRun | undefined;
  #batches = 0;
  /** Claims ahead (the lease form, per-row handlers): claim latency and handler time, moving averages in ms, which size the claims kept in flight. */
  readonly #measures: boolean;
  #claimMs = 0;
  /** `#pump` is handing rows out (a synchronous handler's end pumps again: the running loop takes it). */
  #pumping = false;

  constructor(setup: SubscriptionSetup) {
    this.#s = setup;
    this.name = setup.subscriber.name;
    this.table = setup.spec.table;
    this.#place = Object.freeze({ subscription: this.name, table: this.table });
    const { batch, workers, sharedTransaction } = setup.options;
    const batchHandler = setup.subscriber.kind === "batch";
    this.#pace = claimPaceFor({
      workers,
      batch,
      claimsAhead: setup.strategy.claimsAhead === true,
      // Row lock claims one row per transaction, unless the rows of a claim share one.
      oneRowClaims: setup.strategy.form === "rowLock" && sharedTransaction !== true && !batchHandler,
      wholeBatches: batchHandler,
      // Rows of a shared claim wait in the buffer: their transaction holds one connection for all of them.
      sharedClaims: setup.strategy.form === "rowLock" && sharedTransaction === true && !batchHandler,
    });
    // A single-writer engine (SQLite) runs one statement at a time: claims side by side hide no latency there.
    // One worker keeps one claim at a time, so its rows run in claim order (claims side by side may take rows out of order).
    this.#measures = ((setup.strategy.claimsAhead === true && setup.strategy.claimsSideBySide === true) || this.#pace.sharedClaims) && !batchHandler && workers > 1;
    this.#run = new DeliveryRun(
      setup,
      {
        settling: () => void this.#pace.settling++,
        settled: () => this.#settlementEnded(),
        finished: () => {
          if (this.#stopStarted) this.#finishedAfterStop++;
        },
      },
      {
        measures: this.#measures,
        // A delivery that holds a connection keeps its worker until the settlement released it (the pool budget counts on it).
        // A shared claim's row holds none of its own: its transaction's connection is counted by the pacer, and a worker that
        // waited for the shared commit would wait for rows still in the buffer.
        holdsWorker: setup.strategy.connectionsPerDelivery > 0 && !this.#pace.sharedClaims,
      },
    );
    this.#batchRun =
      setup.subscriber.kind === "batch"
        ? {
            subscriber: setup.subscriber,
            spec: setup.spec,
            place: this.#place,
            clock: setup.clock,
            logger: setup.logger,
            observer: setup.observer,
            settle: (d, outcome, payload) => this.#run.settle(d, outcome, payload, undefined),
            park: (d, error) => this.#run.parkUndecodable(d, error, undefined),
            onError: (d, error) => this.#run.onError(d, error),
            returned: (d, outcome) => this.#run.storable(outcome, "the batch handler", d),
          }
        : undefined;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  start(): void {
    this.#s.strategy.start();
    this.#started = true;
    this.#claimMore();
  }

  /** Claims again now instead of at the end of the poll wait: a publish in this process starts a claim in the same turn. */
  wake(): void {
    this.#wakes++;
    this.#s.strategy.invalidate?.();
    this.#s.activity.touch();
    if (this.#pollTimer !== undefined) {
      this.#pollTimer.cancel();
      this.#pollTimer = undefined;
    }
    this.#claimMore();
  }

  /**
   * Stops claiming and keeping leases; deliveries in work go on; rows claimed ahead and not
   * started are given back. Waits for running claims and the give-back at most `waitMs`
   * (a database down or restarting may never answer); returns how many rows were given back.
   */
  async stopClaiming(waitMs: number): Promise<{ unstarted: number; timedOut: boolean }> {
    this.#stopped = true;
    this.#stopStarted = true;
    this.#pollTimer?.cancel();
    this.#pollTimer = undefined;
    const claims = (async () => {
      while (this.#claims.size > 0) await Promise.all(this.#claims);
    })();
    const claimsDone =
      (await within(
        claims.then(() => true),
        waitMs,
      )) === true;
    const unstarted = this.#buffer.slice(this.#bufferAt);
    this.#buffer = [];
    this.#bufferAt = 0;
    let givenBack = true;
    if (unstarted.length > 0 && this.#s.strategy.releaseUnstarted !== undefined) {
      givenBack =
        (await within(
          this.#s.strategy.releaseUnstarted(unstarted).then(() => true),
          waitMs,
        )) === true;
    }
    this.#s.strategy.stop();
    return { unstarted: unstarted.length, timedOut: !claimsDone || !givenBack };
  }

  /** Waits for deliveries in work and their settlements up to `graceMs`; abandons the rest (their signals abort). */
  async drain(graceMs: number, unstarted = 0, claimTimedOut = false): Promise<SubscriptionStop> {
    const form = this.#s.strategy.form;
    if (this.#inFlight.size === 0 && this.#pace.settling === 0) return { form, finished: this.#finishedAfterStop, unstarted, abandoned: 0, timedOut: claimTimedOut };
    let timer: Timer | undefined;
    const graceOver = new Promise<"grace">((resolve) => {
      timer = this.#s.clock.setTimer(graceMs, () => resolve("grace"));
    });
    const idle = new Promise<"done">((resolve) => this.#idle.push(() => resolve("done")));
    const done = await Promise.race([idle, graceOver]);
    timer?.cancel();
    let abandoned = 0;
    if (done === "grace") {
      for (const delivery of this.#inFlight) {
        this.#s.logger.warn({ id: delivery.id }, `shutdown grace over: delivery abandoned; ${this.#s.strategy.abandonedFate}`);
        delivery.abandon(new Error("shutdown grace period over"));
        abandoned++;
      }
    }
    return { form, finished: this.#finishedAfterStop, unstarted, abandoned, timedOut: claimTimedOut };
  }

  get #buffered(): number {
    return this.#buffer.length - this.#bufferAt;
  }

  /** Hands buffered rows to free workers. */
  #pump(): void {
    // A handler that returns without a promise finishes inside `#start`, which pumps again: the loop below goes on instead.
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      const workers = this.#s.options.workers;
      while (!this.#stopped && this.#inFlight.size < workers && this.#bufferAt < this.#buffer.length) {
        const delivery = this.#buffer[this.#bufferAt++] as ClaimedDelivery;
        this.#start(delivery);
      }
      if (this.#bufferAt === this.#buffer.length && this.#bufferAt > 0) {
        this.#buffer = [];
        this.#bufferAt = 0;
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Starts claims while they are wanted: called whenever a worker, a settlement or a wake may have changed that. */
  #claimMore(): void {
    const pace = this.#pace;
    while (this.#started && !this.#stopped && this.#pollTimer === undefined) {
      pace.inFlight = this.#batchRun === undefined ? this.#inFlight.size : this.#batches;
      pace.buffered = this.#buffered;
      pace.claims = this.#claims.size;
      if (pace.sharedClaims) pace.heldTransactions = this.#s.strategy.heldTransactions ?? 0;
      const limit = rowsToClaim(pace);
      if (limit === 0) return;
      pace.claiming += limit;
      const claim = this.#claim(limit).finally(() => {
        this.#claims.delete(claim);
        pace.claiming -= limit;
        this.#claimMore();
      });
      this.#claims.add(claim);
    }
  }

  async #claim(limit: number): Promise<void> {
    const { strategy, logger } = this.#s;
    const wakes = this.#wakes;
    const telemetry = this.#s.telemetry;
    const claimStartedAt = telemetry === undefined && !this.#measures ? 0 : performance.now();
    let claimed: ClaimedDelivery[];
    try {
      claimed = await strategy.claim(limit);
      telemetry?.claimed(claimStartedAt, claimed.length);
      if (this.#measures) this.#measuredClaim(performance.now() - claimStartedAt);
    } catch (error) {
      logger.error({ ...errorFields(error) }, "claim failed; trying again after the poll interval");
      this.#pollWait();
      return;
    }
    if (claimed.length > 0 && this.#batchRun !== undefined) {
      this.#startBatch(this.#batchRun, claimed);
    } else if (claimed.length > 0) {
      if (this.#buffered === 0) {
        this.#buffer = claimed;
        this.#bufferAt = 0;
      } else {
        for (const delivery of claimed) this.#buffer.push(delivery);
      }
      this.#pump();
    }
    // Short: the queue looks empty; wait for the poll interval unless a publish woke us meanwhile.
    const drained = claimed.length < limit;
    this.#pace.drained = drained;
    if (drained && this.#wakes === wakes) this.#pollWait();
  }

  /** A claim's latency: the claims kept in flight follow it (once a handler's time is known too). */
  #measuredClaim(ms: number): void {
    this.#claimMs = movingAverage(this.#claimMs, ms);
    if (this.#run.handlerMs > 0) this.#pace.aheadClaims = claimsToCover(this.#claimMs, this.#run.handlerMs, this.#pace.workers, this.#pace.batch);
  }

  #pollWait(): void {
    if (this.#stopped || this.#pollTimer !== undefined) return;
    this.#pollTimer = this.#s.clock.setTimer(this.#s.options.pollInterval, () => {
      this.#pollTimer = undefined;
      this.#claimMore();
    });
  }

  /**
   * Runs one delivery. A handler that returns without a promise, on a form whose settlement frees
   * the worker at once (the lease form), runs here to its end with no promise made: the worker is
   * free again when this returns. Anything asynchronous (a promise returned, a schema that may
   * validate later, a transaction to open, a settlement that holds the worker) goes on in `#finish`.
   */
  #start(delivery: ClaimedDelivery): void {
    this.#inFlight.add(delivery);
    this.#s.activity.touch();
    let running: Promise<void> | undefined;
    try {
      running = this.#run.handle(delivery);
    } catch (error) {
      this.#run.unexpected(delivery, error);
    }
    if (running === undefined) this.#finish(delivery);
    else
      running.then(
        () => this.#finish(delivery),
        (error: unknown) => {
          this.#run.unexpected(delivery, error);
          this.#finish(delivery);
        },
      );
  }

  /** A delivery's worker is free again. */
  #finish(delivery: ClaimedDelivery): void {
    this.#inFlight.delete(delivery);
    this.#s.activity.touch();
    // Claim first, while this worker counts as free; then hand it the next buffered row.
    this.#claimMore();
    this.#pump();
    this.#checkIdle();
  }

  /** Runs a batch handler on the rows of one claim; they count in work until every one settled. */
  #startBatch(run: BatchRun, deliveries: readonly ClaimedDelivery[]): void {
    this.#batches++;
    for (const delivery of deliveries) this.#inFlight.add(delivery);
    this.#s.activity.touch();
    void this.#run
      .apart(deliverBatch(run, deliveries))
      .catch((error: unknown) => this.#s.logger.error({ ...errorFields(error), ...this.#place }, "batch delivery failed unexpectedly; its rows return when their holds end"))
      .finally(() => {
        this.#batches--;
        for (const delivery of deliveries) this.#inFlight.delete(delivery);
        this.#s.activity.touch();
        this.#claimMore();
        this.#checkIdle();
      });
  }

  /** A settlement counted apart from its worker ended: a claim may start, or the subscription be idle. */
  #settlementEnded(): void {
    this.#pace.settling--;
    this.#claimMore();
    this.#checkIdle();
  }

  #checkIdle(): void {
    if (this.#inFlight.size === 0 && this.#pace.settling === 0 && this.#idle.length > 0) for (const resolve of this.#idle.splice(0)) resolve();
  }
}
