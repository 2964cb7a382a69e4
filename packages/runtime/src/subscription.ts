import { isSqlInboxError, type InboxDescription, type RoleMarker } from "@sqlinbox/core";
import type { ClaimedDelivery, ClaimStrategy } from "./claim/claim-strategy.js";
import type { Clock, Timer } from "./clock.js";
import { makeContext } from "./context.js";
import { errorFields, type Logger } from "./logger.js";
import { HandlerOutcome, toOutcome } from "./outcome.js";
import { decodePayload } from "./payload.js";
import type { QueueOptions } from "./queue.js";
import type { Outputs, Subscriber } from "./subscriber.js";
import type { Activity } from "./activity.js";

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
  /** How long an undecodable row stays hidden before it is tried (and logged) again. */
  readonly decodeRetryMs: number;
  readonly observer?: DeliveryObserver | undefined;
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
  /** Handlers running. */
  readonly #inFlight = new Map<ClaimedDelivery, Promise<void>>();
  /** Settlements written after their handler returned. */
  readonly #settling = new Set<Promise<void>>();
  /** Claimed ahead, not started yet. */
  #buffer: ClaimedDelivery[] = [];
  #bufferAt = 0;
  /** Settlements in flight beyond which the claim loop waits (memory stays bounded when the database is slow). */
  readonly #maxSettling: number;
  readonly #place: { readonly subscription: string; readonly table: string };
  #stopped = false;
  #loop: Promise<void> | undefined;
  /** Resolves the claim loop's current wait. */
  #signal: (() => void) | undefined;
  #woken = false;

  constructor(setup: SubscriptionSetup) {
    this.#s = setup;
    this.name = setup.subscriber.name;
    this.table = setup.spec.table;
    this.#place = { subscription: this.name, table: this.table };
    this.#maxSettling = 2 * Math.max(setup.options.batch, setup.options.workers) + setup.options.workers;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  start(): void {
    this.#s.strategy.start();
    this.#loop = this.#run();
  }

  /** Claims again now instead of at the end of the poll wait. */
  wake(): void {
    this.#woken = true;
    this.#s.activity.touch();
    this.#kick();
  }

  /** Stops claiming and keeping leases; deliveries in work go on; rows claimed ahead and not started are given back. */
  async stopClaiming(): Promise<void> {
    this.#stopped = true;
    this.#kick();
    await this.#loop;
    const unstarted = this.#buffer.slice(this.#bufferAt);
    this.#buffer = [];
    this.#bufferAt = 0;
    if (unstarted.length > 0) await this.#s.strategy.releaseUnstarted?.(unstarted);
    this.#s.strategy.stop();
  }

  /** Waits for deliveries in work and their settlements up to `graceMs`; abandons the rest (their signals abort). */
  async drain(graceMs: number): Promise<void> {
    if (this.#inFlight.size === 0 && this.#settling.size === 0) return;
    let timer: Timer | undefined;
    const graceOver = new Promise<"grace">((resolve) => {
      timer = this.#s.clock.setTimer(graceMs, () => resolve("grace"));
    });
    const all = async (): Promise<"done"> => {
      // a settlement may still start after a handler in work returns: wait until both are empty
      while (this.#inFlight.size > 0 || this.#settling.size > 0) await Promise.all([...this.#inFlight.values(), ...this.#settling]);
      return "done";
    };
    const done = await Promise.race([all(), graceOver]);
    timer?.cancel();
    if (done === "grace") {
      for (const delivery of this.#inFlight.keys()) {
        this.#s.logger.warn({ id: delivery.id }, "shutdown grace over: delivery abandoned, its row returns when its lease expires");
        delivery.abandon(new Error("shutdown grace period over"));
      }
    }
  }

  #kick(): void {
    const signal = this.#signal;
    this.#signal = undefined;
    signal?.();
  }

  /** Resolves at the next kick (a worker freed, a settlement done, a wake, a stop). */
  #nextKick(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#signal = resolve;
    });
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

  async #run(): Promise<void> {
    const { options, strategy, logger } = this.#s;
    const ahead = strategy.claimsAhead === true;
    while (!this.#stopped) {
      const free = options.workers - this.#inFlight.size;
      if (free <= 0 || this.#buffered > 0 || this.#settling.size >= this.#maxSettling) {
        // Nothing to claim for now: wait for a worker, a settlement, or a stop (a wake meanwhile is kept for the next claim).
        await this.#nextKick();
        continue;
      }
      const limit = ahead ? options.batch : Math.min(options.batch, free);
      this.#woken = false;
      let claimed: ClaimedDelivery[];
      try {
        claimed = await strategy.claim(limit);
      } catch (error) {
        logger.error({ ...errorFields(error) }, "claim failed; trying again after the poll interval");
        await this.#pollWait();
        continue;
      }
      if (claimed.length > 0) {
        if (this.#buffered === 0) {
          this.#buffer = claimed;
          this.#bufferAt = 0;
        } else {
          this.#buffer.push(...claimed);
        }
        this.#pump();
        if (this.#stopped) break;
      }
      if (claimed.length < limit && !this.#woken) await this.#pollWait();
    }
  }

  #pollWait(): Promise<void> {
    if (this.#stopped || this.#woken) return Promise.resolve();
    let timer: Timer | undefined;
    return new Promise<void>((resolve) => {
      const done = (): void => {
        timer?.cancel();
        if (this.#signal === onKick) this.#signal = undefined;
        resolve();
      };
      // Only a wake or a stop ends the wait early: a freed worker does not make the queue fuller.
      const onKick = (): void => {
        if (this.#woken || this.#stopped) done();
        else this.#signal = onKick;
      };
      this.#signal = onKick;
      timer = this.#s.clock.setTimer(this.#s.options.pollInterval, done);
    });
  }

  #start(delivery: ClaimedDelivery): void {
    this.#s.activity.touch();
    const run = this.#deliver(delivery).finally(() => {
      this.#inFlight.delete(delivery);
      this.#s.activity.touch();
      this.#pump();
      this.#kick();
    });
    this.#inFlight.set(delivery, run);
  }

  async #deliver(delivery: ClaimedDelivery): Promise<void> {
    const { spec, subscriber, clock, logger, observer } = this.#s;
    let payload: unknown;
    try {
      payload = await decodePayload(spec, delivery.row, { ...this.#place, id: delivery.id });
    } catch (error) {
      const parked = this.#parkUndecodable(delivery, error);
      if (this.#s.strategy.connectionsPerDelivery > 0) await parked;
      else this.#settleApart(parked);
      return;
    }
    observer?.delivered({ subscription: this.name, id: delivery.id, attempt: delivery.attempt, payload });
    const ctx = makeContext<readonly RoleMarker[]>(
      { subscription: this.name, table: this.table, id: delivery.id, attempt: delivery.attempt, leaseDeadline: () => delivery.leaseDeadline() },
      () => delivery.signal,
      clock,
    );
    let outcome: HandlerOutcome;
    try {
      outcome = toOutcome(await subscriber.invoke(payload as never, this.#s.outputs, ctx as never));
    } catch (error) {
      logger.error({ ...errorFields(error), ...this.#place, id: delivery.id, attempt: delivery.attempt }, "handler failed; the row is released for another attempt");
      outcome = HandlerOutcome.retry();
    }
    const settlement = this.#settle(delivery, outcome, payload);
    // A delivery that holds a connection keeps its worker until the settlement released it (the pool budget counts on it).
    if (this.#s.strategy.connectionsPerDelivery > 0) await settlement;
    else this.#settleApart(settlement);
  }

  /** Keeps a settlement until it is written, apart from the worker that is free again. */
  #settleApart(settlement: Promise<void>): void {
    this.#settling.add(settlement);
    void settlement.finally(() => {
      this.#settling.delete(settlement);
      this.#kick();
    });
  }

  /** Writes the outcome; never throws (a failure is logged and shown to the observer). */
  async #settle(delivery: ClaimedDelivery, outcome: HandlerOutcome, payload: unknown): Promise<void> {
    const { logger, observer } = this.#s;
    let settleError: unknown;
    try {
      await delivery.settle(outcome);
      if (outcome.kind === "drop") logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery dropped by its handler");
    } catch (error) {
      settleError = error;
      const code = isSqlInboxError(error) ? error.code : undefined;
      logger.error({ ...errorFields(error), ...this.#place, id: delivery.id, outcome: outcome.kind, code }, "settlement failed");
    }
    observer?.settled({
      subscription: this.name, id: delivery.id, attempt: delivery.attempt, payload, outcome,
      ...(settleError !== undefined ? { error: settleError } : {}), signalAborted: delivery.signal.aborted,
    });
  }

  /**
   * A payload that cannot be decoded never reaches the handler and is never deleted: it is
   * logged with subscription, table and id, and released hidden for `decodeRetryMs`, so it
   * comes back (and is logged again, its attempt counted) until a person fixes the row or the code.
   */
  async #parkUndecodable(delivery: ClaimedDelivery, error: unknown): Promise<void> {
    const { spec, logger, decodeRetryMs } = this.#s;
    logger.error(
      { ...errorFields(error), subscription: this.name, table: spec.table, id: delivery.id, attempt: delivery.attempt, retryInMs: decodeRetryMs },
      "payload cannot be decoded: row kept, not delivered; fix the row or the code",
    );
    try {
      await delivery.settle(HandlerOutcome.retryAfter(decodeRetryMs));
    } catch (settleError) {
      logger.error({ ...errorFields(settleError), subscription: this.name, table: spec.table, id: delivery.id }, "could not release an undecodable row; it returns when its lease expires");
    }
  }
}
