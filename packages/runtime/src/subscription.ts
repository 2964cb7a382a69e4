import { isSqlInboxError, isStandardSchema, type InboxDescription, type RoleMarker } from "@sqlinbox/core/internal";
import type { ClaimedDelivery, ClaimStrategy } from "./claim/claim-strategy.js";
import type { Clock, Timer } from "./clock.js";
import { deliveryContext } from "./context.js";
import { errorFields, type Logger } from "./logger.js";
import { noDeadLetter } from "./errors.js";
import { defaultOnDecodeError, defaultOnError, type FailureContext, type FailurePolicy } from "./failure-policy.js";
import { HandlerOutcome, toOutcome } from "./outcome.js";
import { decodePayload, decodePayloadNow } from "./payload.js";
import type { QueueOptions } from "./queue.js";
import type { Outputs, Subscriber } from "./subscriber.js";
import type { Activity } from "./activity.js";
import { claimPaceFor, rowsToClaim, type ClaimPace } from "./claim-pacer.js";

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
  /** What a throw and an undecodable payload become. */
  readonly #onError: FailurePolicy;
  readonly #onDecodeError: FailurePolicy;
  #started = false;
  #stopped = false;
  /** A claim came back short: no claim until the poll interval passes or a wake. */
  #pollTimer: Timer | undefined;
  /** Counts wakes, so a claim that came back short knows whether a publish happened while it ran. */
  #wakes = 0;

  constructor(setup: SubscriptionSetup) {
    this.#s = setup;
    this.name = setup.subscriber.name;
    this.table = setup.spec.table;
    this.#place = Object.freeze({ subscription: this.name, table: this.table });
    this.#decodesAsync = isStandardSchema(setup.spec.payloadType);
    this.#onError = setup.options.onError ?? defaultOnError();
    this.#onDecodeError = setup.options.onDecodeError ?? defaultOnDecodeError;
    const { batch, workers } = setup.options;
    this.#pace = claimPaceFor({ workers, batch, claimsAhead: setup.strategy.claimsAhead === true, oneRowClaims: setup.strategy.form === "rowLock" });
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
    this.#s.activity.touch();
    if (this.#pollTimer !== undefined) {
      this.#pollTimer.cancel();
      this.#pollTimer = undefined;
    }
    this.#claimMore();
  }

  /** Stops claiming and keeping leases; deliveries in work go on; rows claimed ahead and not started are given back. */
  async stopClaiming(): Promise<void> {
    this.#stopped = true;
    this.#pollTimer?.cancel();
    this.#pollTimer = undefined;
    while (this.#claims.size > 0) await Promise.all(this.#claims);
    const unstarted = this.#buffer.slice(this.#bufferAt);
    this.#buffer = [];
    this.#bufferAt = 0;
    if (unstarted.length > 0) await this.#s.strategy.releaseUnstarted?.(unstarted);
    this.#s.strategy.stop();
  }

  /** Waits for deliveries in work and their settlements up to `graceMs`; abandons the rest (their signals abort). */
  async drain(graceMs: number): Promise<void> {
    if (this.#inFlight.size === 0 && this.#pace.settling === 0) return;
    let timer: Timer | undefined;
    const graceOver = new Promise<"grace">((resolve) => {
      timer = this.#s.clock.setTimer(graceMs, () => resolve("grace"));
    });
    const idle = new Promise<"done">((resolve) => this.#idle.push(() => resolve("done")));
    const done = await Promise.race([idle, graceOver]);
    timer?.cancel();
    if (done === "grace") {
      for (const delivery of this.#inFlight) {
        this.#s.logger.warn({ id: delivery.id }, `shutdown grace over: delivery abandoned; ${this.#s.strategy.abandonedFate}`);
        delivery.abandon(new Error("shutdown grace period over"));
      }
    }
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
      pace.inFlight = this.#inFlight.size;
      pace.buffered = this.#buffered;
      pace.claims = this.#claims.size;
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
    let claimed: ClaimedDelivery[];
    try {
      claimed = await strategy.claim(limit);
    } catch (error) {
      logger.error({ ...errorFields(error) }, "claim failed; trying again after the poll interval");
      this.#pollWait();
      return;
    }
    if (claimed.length > 0) {
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
    const holdsConnection = this.#s.strategy.connectionsPerDelivery > 0;
    let payload: unknown;
    try {
      payload = this.#decodesAsync
        ? await decodePayload(spec, delivery.row, { ...this.#place, id: delivery.id })
        : decodePayloadNow(spec, delivery.row, { ...this.#place, id: delivery.id });
    } catch (error) {
      const outcome = this.#failed(this.#onDecodeError, "decode", delivery, error);
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
      const settled = this.#apart(this.#settle(delivery, outcome, undefined, false));
      if (holdsConnection) await settled;
      return;
    }
    observer?.delivered({ subscription: this.name, id: delivery.id, attempt: delivery.attempt, payload });
    const ctx = deliveryContext<readonly RoleMarker[]>(this.#place, delivery, clock);
    let outcome: HandlerOutcome;
    try {
      const result = subscriber.invoke(payload as never, this.#s.outputs, ctx as never);
      // A handler that returns without a promise costs no extra turn of the microtask queue.
      outcome = toOutcome(isPromiseLike(result) ? await result : result);
    } catch (error) {
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
    const settled = this.#apart(this.#settle(delivery, outcome, payload));
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
    try {
      return toOutcome(policy(error, delivery.attempt, ctx));
    } catch (policyError) {
      logger.error({ ...errorFields(policyError), ...this.#place, id: delivery.id }, `the ${what === "handler" ? "onError" : "onDecodeError"} policy failed; the default decides`);
      return fallback(error, delivery.attempt, ctx);
    }
  }

  /** A dead letter needs a destination: without one the row is kept, hidden for the decode delay, and the mistake logged. */
  #keepWithoutDeadLetter(delivery: ClaimedDelivery, outcome: HandlerOutcome): HandlerOutcome {
    if (outcome.kind !== "deadLetter" || this.#s.options.deadLetter !== undefined) return outcome;
    this.#s.logger.error({ ...errorFields(noDeadLetter({ ...this.#place, id: delivery.id })), ...this.#place, id: delivery.id }, "no dead-letter destination: row kept");
    return HandlerOutcome.retryAfter(this.#s.decodeRetryMs);
  }

  /** Writes the outcome; never throws (a failure is logged and shown to the observer, when `observed`). */
  async #settle(delivery: ClaimedDelivery, chosen: HandlerOutcome, payload: unknown, observed = true): Promise<void> {
    const { logger, observer } = this.#s;
    const outcome = this.#keepWithoutDeadLetter(delivery, chosen);
    let settleError: unknown;
    try {
      await delivery.settle(outcome);
      if (outcome.kind === "drop") logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery dropped by its handler");
    } catch (error) {
      settleError = error;
      const code = isSqlInboxError(error) ? error.code : undefined;
      logger.error({ ...errorFields(error), ...this.#place, id: delivery.id, outcome: outcome.kind, code }, "settlement failed");
    }
    if (!observed) return;
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
}

/** The log line of an undecodable payload, by what the onDecodeError policy made of it. */
function undecodableMessage(outcome: HandlerOutcome): string {
  if (outcome.kind === "deadLetter") return "payload cannot be decoded: row moved to the dead letter";
  if (outcome.kind === "ack" || outcome.kind === "drop") return `payload cannot be decoded: row finished (${outcome.kind}) by the onDecodeError policy`;
  return "payload cannot be decoded: row kept, not delivered; fix the row or the code";
}
