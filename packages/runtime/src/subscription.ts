import { isSqlInboxError, isStandardSchema, type InboxDescription, type RoleMarker } from "@sqlinbox/core/internal";
import type { ClaimedDelivery, ClaimStrategy } from "./claim/claim-strategy.js";
import type { Clock, Timer } from "./clock.js";
import { deliveryContext, type ContextPlace } from "./context.js";
import { errorFields, type Logger } from "./logger.js";
import { delayWithoutColumn, noDeadLetter } from "./errors.js";
import { defaultOnDecodeError, defaultOnError, type FailureContext, type FailurePolicy } from "./failure-policy.js";
import { HandlerOutcome, toOutcome } from "./outcome.js";
import { decodePayload, decodePayloadNow } from "./payload.js";
import type { QueueOptions } from "./queue.js";
import type { Outputs, Subscriber } from "./subscriber.js";
import type { Activity } from "./activity.js";
import { claimPaceFor, claimsToCover, rowsToClaim, type ClaimPace } from "./claim-pacer.js";
import { deliverBatch, type BatchRun } from "./batch-delivery.js";
import type { AnyTransaction } from "./database.js";
import type { DeliveryTrace, SubscriptionTelemetry } from "./telemetry/telemetry.js";
import { within, type SubscriptionStop } from "./stop-report.js";

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

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";

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
  /** The payload has a Standard Schema, which may validate asynchronously. */
  readonly #decodesAsync: boolean;
  /** Claim statements running. */
  readonly #claims = new Set<Promise<void>>();
  /** Claimed ahead, not started yet. */
  #buffer: ClaimedDelivery[] = [];
  #bufferAt = 0;
  /** What `rowsToClaim` reads: the shape, the claiming/settling counters, drained; the rest is copied in before each ask. */
  readonly #pace: ClaimPace;
  readonly #place: { readonly subscription: string; readonly table: string };
  /** The place and the headers column, for delivery contexts (kept apart from `#place`, which logs spread). */
  readonly #contextPlace: ContextPlace;
  /** What a throw and an undecodable payload become. */
  readonly #onError: FailurePolicy;
  readonly #onDecodeError: FailurePolicy;
  /** The table stores a delay (a retryAfter column, or the lease column): else a `retryAfter` is parked in this process. */
  readonly #storesDelay: boolean;
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
  #handlerMs = 0;

  constructor(setup: SubscriptionSetup) {
    this.#s = setup;
    this.name = setup.subscriber.name;
    this.table = setup.spec.table;
    this.#place = Object.freeze({ subscription: this.name, table: this.table });
    this.#contextPlace = Object.freeze({ ...this.#place, headersColumn: setup.spec.headers?.name });
    this.#decodesAsync = isStandardSchema(setup.spec.payloadType);
    this.#onError = setup.options.onError ?? defaultOnError();
    this.#onDecodeError = setup.options.onDecodeError ?? defaultOnDecodeError;
    this.#storesDelay = setup.spec.retryAfter !== undefined || setup.spec.form === "lease";
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
    this.#measures = setup.strategy.claimsAhead === true && !batchHandler && setup.strategy.claimsSideBySide === true && workers > 1;
    this.#batchRun =
      setup.subscriber.kind === "batch"
        ? {
            subscriber: setup.subscriber,
            spec: setup.spec,
            place: this.#place,
            clock: setup.clock,
            logger: setup.logger,
            observer: setup.observer,
            settle: (d, outcome, payload) => this.#settle(d, outcome, payload, undefined),
            park: (d, error) => this.#parkUndecodable(d, error, undefined),
            onError: (d, error) => this.#failed(this.#onError, "handler", d, error),
            returned: (d, outcome) => this.#storable(outcome, "the batch handler", d),
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
    const workers = this.#s.options.workers;
    while (!this.#stopped && this.#inFlight.size < workers && this.#bufferAt < this.#buffer.length) {
      const delivery = this.#buffer[this.#bufferAt++] as ClaimedDelivery;
      this.#start(delivery);
    }
    if (this.#bufferAt === this.#buffer.length && this.#bufferAt > 0) {
      this.#buffer = [];
      this.#bufferAt = 0;
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
    if (this.#handlerMs > 0) this.#pace.aheadClaims = claimsToCover(this.#claimMs, this.#handlerMs, this.#pace.workers, this.#pace.batch);
  }

  #pollWait(): void {
    if (this.#stopped || this.#pollTimer !== undefined) return;
    this.#pollTimer = this.#s.clock.setTimer(this.#s.options.pollInterval, () => {
      this.#pollTimer = undefined;
      this.#claimMore();
    });
  }

  #start(delivery: ClaimedDelivery): void {
    this.#inFlight.add(delivery);
    this.#s.activity.touch();
    void this.#deliver(delivery);
  }

  /** Runs a batch handler on the rows of one claim; they count in work until every one settled. */
  #startBatch(run: BatchRun, deliveries: readonly ClaimedDelivery[]): void {
    this.#batches++;
    for (const delivery of deliveries) this.#inFlight.add(delivery);
    this.#s.activity.touch();
    void this.#apart(deliverBatch(run, deliveries))
      .catch((error: unknown) => this.#s.logger.error({ ...errorFields(error), ...this.#place }, "batch delivery failed unexpectedly; its rows return when their holds end"))
      .finally(() => {
        this.#batches--;
        for (const delivery of deliveries) this.#inFlight.delete(delivery);
        this.#s.activity.touch();
        this.#claimMore();
        this.#checkIdle();
      });
  }

  /** Runs one delivery's handler and settles it; never rejects. */
  async #deliver(delivery: ClaimedDelivery): Promise<void> {
    try {
      await this.#handle(delivery);
    } catch (error) {
      this.#s.logger.error({ ...errorFields(error), ...this.#place, id: delivery.id }, "delivery failed unexpectedly; the row returns when its hold ends");
    } finally {
      this.#inFlight.delete(delivery);
      this.#s.activity.touch();
      // Claim first, while this worker counts as free; then hand it the next buffered row.
      this.#claimMore();
      this.#pump();
      this.#checkIdle();
    }
  }

  async #handle(delivery: ClaimedDelivery): Promise<void> {
    const { spec, subscriber, clock, logger, observer } = this.#s;
    // A delivery that holds a connection keeps its worker until the settlement released it (the pool budget counts on it).
    // A shared claim's row holds none of its own: its transaction's connection is counted by the pacer, and a worker that
    // waited for the shared commit would wait for rows still in the buffer.
    const holdsConnection = this.#s.strategy.connectionsPerDelivery > 0 && !this.#pace.sharedClaims;
    const trace = this.#s.telemetry?.begin(delivery);
    let payload: unknown;
    try {
      payload = this.#decodesAsync
        ? await decodePayload(spec, delivery.row, { ...this.#place, id: delivery.id })
        : decodePayloadNow(spec, delivery.row, { ...this.#place, id: delivery.id });
    } catch (error) {
      const parked = this.#apart(this.#parkUndecodable(delivery, error, trace));
      if (holdsConnection) await parked;
      return;
    }
    observer?.delivered({ subscription: this.name, id: delivery.id, attempt: delivery.attempt, payload });
    let tx: AnyTransaction | undefined;
    if (this.#s.options.transactional === true) {
      try {
        tx = await delivery.openHandlerTransaction();
      } catch (error) {
        logger.error({ ...errorFields(error), ...this.#place, id: delivery.id }, "could not open the handler's transaction; the row is released for another attempt");
        const released = this.#apart(this.#settle(delivery, HandlerOutcome.retry(), payload, trace));
        if (holdsConnection) await released;
        return;
      }
    }
    const ctx = deliveryContext<readonly RoleMarker[]>(this.#contextPlace, delivery, clock, tx);
    let outcome: HandlerOutcome;
    const handlerStartedAt = trace === undefined && !this.#measures ? 0 : performance.now();
    try {
      if (subscriber.kind !== "row") throw new Error("a batch subscriber's rows go through deliverBatch");
      const result =
        trace === undefined
          ? subscriber.invoke(payload as never, this.#s.outputs, ctx as never)
          : trace.run(subscriber.invoke, subscriber, payload as never, this.#s.outputs, ctx as never);
      // A handler that returns without a promise costs no extra turn of the microtask queue.
      outcome = this.#storable(toOutcome(isPromiseLike(result) ? await result : result), "the handler", delivery);
      trace?.handled(handlerStartedAt, false);
      if (this.#measures) this.#handlerMs = movingAverage(this.#handlerMs, Math.max(1e-6, performance.now() - handlerStartedAt));
    } catch (error) {
      trace?.handled(handlerStartedAt, true, error);
      outcome = this.#failed(this.#onError, "handler", delivery, error);
      logger.error(
        {
          ...errorFields(error),
          ...this.#place,
          id: delivery.id,
          attempt: delivery.attempt,
          outcome: outcome.kind,
          ...(outcome.kind === "retryAfter" ? { retryInMs: outcome.ms } : {}),
        },
        outcome.kind === "deadLetter" ? "handler failed; the row goes to the dead letter" : "handler failed; the row is released for another attempt",
      );
    }
    const settled = this.#apart(this.#settle(delivery, outcome, payload, trace));
    if (holdsConnection) await settled;
  }

  /** Counts a settlement until it is written, apart from the worker (free again unless it holds a connection). */
  #apart(settlement: Promise<void>): Promise<void> {
    this.#pace.settling++;
    return settlement.finally(() => {
      this.#pace.settling--;
      this.#claimMore();
      this.#checkIdle();
    });
  }

  #countFinished(): void {
    if (this.#stopStarted) this.#finishedAfterStop++;
  }

  #checkIdle(): void {
    if (this.#inFlight.size === 0 && this.#pace.settling === 0 && this.#idle.length > 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  /**
   * What a failure becomes under `policy`. A policy that throws, or returns no outcome, falls back
   * to the default; a dead letter on a queue without one keeps the row (never loses it).
   */
  #failed(policy: FailurePolicy, what: "handler" | "decode", delivery: ClaimedDelivery, error: unknown): HandlerOutcome {
    const { options, logger, decodeRetryMs } = this.#s;
    const ctx: FailureContext = {
      ...this.#place,
      id: delivery.id,
      deadLetter: options.deadLetter !== undefined,
      maxAttempts: options.deadLetter?.maxAttempts,
      keepMs: decodeRetryMs,
    };
    const fallback = what === "handler" ? defaultOnError() : defaultOnDecodeError;
    // The defaults may park a row on a table with no column for a time; a policy of the app's own may not (it does not compile).
    const own = policy === options.onError || policy === options.onDecodeError;
    try {
      const outcome = toOutcome(policy(error, delivery.attempt, ctx));
      return own ? this.#storable(outcome, what === "handler" ? "the onError policy" : "the onDecodeError policy", delivery) : outcome;
    } catch (policyError) {
      logger.error({ ...errorFields(policyError), ...this.#place, id: delivery.id }, `the ${what === "handler" ? "onError" : "onDecodeError"} policy failed; the default decides`);
      return fallback(error, delivery.attempt, ctx);
    }
  }

  /**
   * A `retryAfter` from the app's own code on a table with no column for a time does not compile;
   * one that arrives untyped is logged as a `Declaration` error naming the column to add, and
   * served without holding anything: the row is released now and parked in this process.
   */
  #storable(outcome: HandlerOutcome, source: string, delivery: ClaimedDelivery): HandlerOutcome {
    if (outcome.kind !== "retryAfter" || this.#storesDelay) return outcome;
    const form = this.#s.spec.form === "advisory" ? "advisory" : "rowLock";
    const place = { ...this.#place, id: delivery.id };
    this.#s.logger.error(
      { ...errorFields(delayWithoutColumn(outcome.ms, form, source, place)), ...place },
      "retryAfter on a table with no retryAfter column: row released and parked in this process",
    );
    return outcome;
  }

  /** A dead letter needs a destination: without one the row is kept, hidden for the decode delay, and the mistake logged. */
  #keepWithoutDeadLetter(delivery: ClaimedDelivery, outcome: HandlerOutcome): HandlerOutcome {
    if (outcome.kind !== "deadLetter" || this.#s.options.deadLetter !== undefined) return outcome;
    this.#s.logger.error({ ...errorFields(noDeadLetter({ ...this.#place, id: delivery.id })), ...this.#place, id: delivery.id }, "no dead-letter destination: row kept");
    return HandlerOutcome.retryAfter(this.#s.decodeRetryMs);
  }

  /** Writes the outcome; never throws (a failure is logged and shown to the observer). */
  async #settle(delivery: ClaimedDelivery, chosen: HandlerOutcome, payload: unknown, trace: DeliveryTrace | undefined): Promise<void> {
    const { logger, observer } = this.#s;
    const outcome = this.#keepWithoutDeadLetter(delivery, chosen);
    let settleError: unknown;
    try {
      await delivery.settle(outcome);
      this.#countFinished();
      if (outcome.kind === "drop") logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery dropped by its handler");
    } catch (error) {
      settleError = error;
      const code = isSqlInboxError(error) ? error.code : undefined;
      logger.error({ ...errorFields(error), ...this.#place, id: delivery.id, outcome: outcome.kind, code }, "settlement failed");
    }
    trace?.end(outcome.kind, settleError, delivery.signal);
    observer?.settled({
      subscription: this.name,
      id: delivery.id,
      attempt: delivery.attempt,
      payload,
      outcome,
      ...(settleError !== undefined ? { error: settleError } : {}),
      signalAborted: delivery.signal.aborted,
    });
  }

  /**
   * A payload that cannot be decoded never reaches the handler: the onDecodeError policy decides
   * (by default the row is kept, logged with subscription, table and id, and kept out of claims
   * for `decodeRetryMs`; or moved to the dead letter where one is declared).
   */
  async #parkUndecodable(delivery: ClaimedDelivery, error: unknown, trace: DeliveryTrace | undefined): Promise<void> {
    const { logger } = this.#s;
    const outcome = this.#keepWithoutDeadLetter(delivery, this.#failed(this.#onDecodeError, "decode", delivery, error));
    logger.error(
      {
        ...errorFields(error),
        ...this.#place,
        id: delivery.id,
        attempt: delivery.attempt,
        outcome: outcome.kind,
        ...(outcome.kind === "retryAfter" ? { retryInMs: outcome.ms } : {}),
      },
      undecodableMessage(outcome),
    );
    try {
      await delivery.settle(outcome);
      trace?.end("undecodable", undefined, delivery.signal);
    } catch (settleError) {
      trace?.end("undecodable", settleError, delivery.signal);
      logger.error({ ...errorFields(settleError), ...this.#place, id: delivery.id, outcome: outcome.kind }, "could not settle an undecodable row; it returns when its hold ends");
    }
  }
}

/** An exponential moving average (weight 1/5 on the new sample); the first sample stands alone. */
function movingAverage(average: number, sample: number): number {
  return average === 0 ? sample : average + (sample - average) / 5;
}

/** The log line of an undecodable payload, by what the onDecodeError policy made of it. */
function undecodableMessage(outcome: HandlerOutcome): string {
  if (outcome.kind === "deadLetter") return "payload cannot be decoded: row moved to the dead letter";
  if (outcome.kind === "ack" || outcome.kind === "drop") return `payload cannot be decoded: row finished (${outcome.kind}) by the onDecodeError policy`;
  return "payload cannot be decoded: row kept, not delivered; fix the row or the code";
}
