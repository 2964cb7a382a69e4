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
 * deliveries at once; settles each by its outcome.
 */
export class Subscription {
  readonly name: string;
  readonly table: string;
  readonly #s: SubscriptionSetup;
  readonly #inFlight = new Map<ClaimedDelivery, Promise<void>>();
  #stopped = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #woken = false;

  constructor(setup: SubscriptionSetup) {
    this.#s = setup;
    this.name = setup.subscriber.name;
    this.table = setup.spec.table;
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
    this.#wake?.();
  }

  /** Stops claiming and keeping leases; deliveries in work go on. */
  async stopClaiming(): Promise<void> {
    this.#stopped = true;
    this.#s.strategy.stop();
    this.#wake?.();
    await this.#loop;
  }

  /** Waits for deliveries in work up to `graceMs`; abandons the rest (their signals abort). */
  async drain(graceMs: number): Promise<void> {
    if (this.#inFlight.size === 0) return;
    let timer: Timer | undefined;
    const graceOver = new Promise<"grace">((resolve) => {
      timer = this.#s.clock.setTimer(graceMs, () => resolve("grace"));
    });
    const done = await Promise.race([Promise.all(this.#inFlight.values()).then(() => "done" as const), graceOver]);
    timer?.cancel();
    if (done === "grace") {
      for (const delivery of this.#inFlight.keys()) {
        this.#s.logger.warn({ id: delivery.id }, `shutdown grace over: delivery abandoned (${this.#s.strategy.form === "lease" ? "its row returns when its lease expires" : this.#s.strategy.form === "rowLock" ? "its transaction rolled back: the row is back, its attempt not spent" : "its key unlocked: the row is back, its attempt spent"})`);
        delivery.abandon(new Error("shutdown grace period over"));
      }
    }
  }

  async #run(): Promise<void> {
    const { options, strategy, logger } = this.#s;
    while (!this.#stopped) {
      const free = options.workers - this.#inFlight.size;
      if (free <= 0) {
        // Every worker busy: wait for one to finish (a wake meanwhile is kept for the next claim).
        await this.#waitFor(Promise.race(this.#inFlight.values()), false);
        continue;
      }
      const limit = Math.min(options.batch, free);
      this.#woken = false;
      let claimed: ClaimedDelivery[];
      try {
        claimed = await strategy.claim(limit);
      } catch (error) {
        logger.error({ ...errorFields(error) }, "claim failed; trying again after the poll interval");
        await this.#pollWait();
        continue;
      }
      for (const delivery of claimed) this.#start(delivery);
      if (claimed.length < limit && !this.#woken) await this.#pollWait();
    }
  }

  #pollWait(): Promise<void> {
    let timer: Timer | undefined;
    const elapsed = new Promise<void>((resolve) => {
      timer = this.#s.clock.setTimer(this.#s.options.pollInterval, resolve);
    });
    return this.#waitFor(elapsed, true).finally(() => timer?.cancel());
  }

  /** Waits for `event` or a stop, and for a wake too when `wakeable`, whichever comes first. */
  async #waitFor(event: Promise<unknown>, wakeable: boolean): Promise<void> {
    if (this.#stopped || (wakeable && this.#woken)) return;
    const woken = new Promise<void>((resolve) => {
      this.#wake = () => {
        if (wakeable || this.#stopped) resolve();
      };
    });
    await Promise.race([event.then(() => undefined, () => undefined), woken]);
    this.#wake = undefined;
  }

  #start(delivery: ClaimedDelivery): void {
    const run = this.#deliver(delivery).finally(() => {
      this.#inFlight.delete(delivery);
      this.#s.activity.touch();
    });
    this.#inFlight.set(delivery, run);
  }

  async #deliver(delivery: ClaimedDelivery): Promise<void> {
    const { spec, subscriber, clock, logger, observer } = this.#s;
    const place = { subscription: this.name, table: spec.table, id: delivery.id };
    const log = logger.child ? logger.child({ id: delivery.id }) : logger;
    let payload: unknown;
    try {
      payload = await decodePayload(spec, delivery.row, place);
    } catch (error) {
      await this.#parkUndecodable(delivery, error);
      return;
    }
    observer?.delivered({ subscription: this.name, id: delivery.id, attempt: delivery.attempt, payload });
    const ctx = makeContext<readonly RoleMarker[]>(
      { ...place, attempt: delivery.attempt, leaseDeadline: () => delivery.leaseDeadline() },
      delivery.signal,
      clock,
    );
    let outcome: HandlerOutcome;
    try {
      outcome = toOutcome(await subscriber.invoke(payload as never, this.#s.outputs, ctx as never));
    } catch (error) {
      logger.error({ ...errorFields(error), ...place, attempt: delivery.attempt }, "handler failed; the row is released for another attempt");
      outcome = HandlerOutcome.retry();
    }
    let settleError: unknown;
    try {
      await delivery.settle(outcome);
      if (outcome.kind === "drop") log.warn({ ...place, attempt: delivery.attempt }, "delivery dropped by its handler");
    } catch (error) {
      settleError = error;
      const code = isSqlInboxError(error) ? error.code : undefined;
      logger.error({ ...errorFields(error), ...place, outcome: outcome.kind, code }, "settlement failed");
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
