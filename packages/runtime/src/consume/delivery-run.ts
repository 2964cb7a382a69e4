import { isSqlInboxError, isStandardSchema, type RoleMarker } from "@sqlinbox/core/internal";
import type { ClaimedDelivery, SettleDone } from "../claim/claim-strategy.js";
import { deliveryContext, type ContextPlace } from "../declare/context.js";
import type { AnyTransaction } from "../drivers/database.js";
import { afterTimeoutGrace } from "../errors.js";
import { errorFields } from "../logger.js";
import { HandlerOutcome, toOutcome } from "../declare/outcome.js";
import { ACKED, delayOf, dropsRow, failureFate, type Settlement, undecodableMessage } from "../claim/settlement.js";
import { decodePayload, decodePayloadNow } from "../declare/payload.js";
import type { SettledEvent, SubscriptionSetup } from "./setup.js";
import { movingAverage } from "./claim-pacer.js";
import type { HandlerTimeout } from "../declare/queue.js";
import { deliveryWithin, fencedTransaction, type FencedTransaction } from "./handler-timeout.js";
import { SettlementPolicy } from "./settlement-policy.js";
import { NoticeOrder } from "./notice-order.js";
import type { HandlerEnd, DeliveryReport } from "./delivery-report.js";

export type { DeliveryReport, HandlerEnd } from "./delivery-report.js";

/**
 * One delivery from its handler's call to its report, which it then is. It is what its delivery
 * tells when the settlement was written (`settled`): no closure is made per delivery.
 */
class RunningDelivery implements DeliveryReport, SettleDone {
  /** Set once decided, before the settlement is written (`DeliveryRun.#settle`); nothing reads it before. */
  settlement!: Settlement;
  written = false;
  error: unknown = undefined;
  handlerMs = 0;
  /** What the handler threw (a timeout included), where it threw: told to the observer. */
  cause: unknown = undefined;
  delay: { readonly ms: number; readonly from: number } | undefined = undefined;
  /** The clock's time as the settlement began, where it delays its row. */
  from = 0;
  /** Where the worker waits for the settlement: told last. */
  after: (() => void) | undefined = undefined;

  constructor(
    readonly end: (run: RunningDelivery) => void,
    readonly delivery: ClaimedDelivery,
    readonly payload: unknown,
    /** `performance.now()` at the handler's call, where something measures it; else 0. */
    readonly startedAt: number,
    public handler: HandlerEnd,
    /** Counted in the subscription's `settling` while its settlement is written (a batch's rows count as their batch). */
    readonly counted = true,
  ) {}

  settled(ok: boolean, error?: unknown): void {
    this.written = ok;
    this.error = error;
    this.end(this);
  }
}

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";

/**
 * One subscription's deliveries, each from its claimed row to its settlement: decode the payload,
 * call the handler, decide the settlement once from what it returned (or threw) — the failure
 * policies, the `maxAttempts` cap, the missing dead-letter destination, a delay the table cannot
 * store (`decideSettlement`) — and hand that value to the delivery, which writes it. A handler that
 * returns without a promise runs to its end here with no promise made; where the form frees the
 * worker at once (the lease form), the settlement goes on apart. Each delivery ends with one
 * report to its subscription (`ended`), which decides when and on which worker (`Subscription`).
 */
export class DeliveryRun {
  /** Handler time, a moving average in ms, where the subscription sizes its claims by it (`measures`). */
  handlerMs = 0;
  readonly #s: SubscriptionSetup;
  readonly #ended: (report: DeliveryReport) => void;
  readonly #name: string;
  readonly #place: { readonly subscription: string; readonly table: string };
  /** A delivery's place, for an error (built only then). */
  readonly #placeOf: (id: unknown) => { readonly subscription: string; readonly table: string; readonly id: unknown };
  /** The place and the headers column, for delivery contexts (kept apart from `#place`, which logs spread). */
  readonly #contextPlace: ContextPlace;
  /** The payload has a Standard Schema, which may validate asynchronously. */
  readonly #decodesAsync: boolean;
  /** What each settlement is decided by: the failure policies and the rules. */
  readonly #policy: SettlementPolicy;
  /** What a running delivery tells once its settlement was written or failed (one function for all of them). */
  readonly #end: (run: RunningDelivery) => void;
  readonly #measures: boolean;
  /** The subscription's counter of settlements being written (a batch's counts once, while it runs), which its claims are paced by. */
  readonly #counts: { settling: number };
  /** The worker waits for the settlement (a delivery that holds a connection of its own). */
  readonly #holdsWorker: boolean;
  /** Aborts when the shutdown grace is over: handler timeouts still pending are dropped with their deliveries. */
  readonly #timeoutsGivenUp = new AbortController();
  /** Deliveries dropped because their handler stopped on a cancel: logged as that, not as a handler's drop. */
  readonly #cancelDrops = new WeakSet<ClaimedDelivery>();
  /** With an observer: what it is told of one row goes out in order (a retried row claimed again before its write's reply is read). */
  readonly #order = new NoticeOrder();

  /** `pace`: whether handler time is measured, and the counter this run keeps of the settlements being written. */
  constructor(setup: SubscriptionSetup, ended: (report: DeliveryReport) => void, pace: { readonly measures: boolean; settling: number }) {
    this.#s = setup;
    this.#ended = ended;
    this.#measures = pace.measures;
    this.#counts = pace;
    this.#holdsWorker = setup.strategy.profile.holdsWorker;
    this.#name = setup.subscriber.name;
    const place = Object.freeze({ subscription: this.#name, table: setup.spec.table });
    this.#place = place;
    this.#placeOf = (id) => ({ ...place, id });
    this.#contextPlace = Object.freeze({ ...place, headersColumn: setup.spec.headers?.name });
    this.#decodesAsync = isStandardSchema(setup.spec.payloadType);
    this.#policy = new SettlementPolicy(setup, place);
    this.#end = (run) => this.#written(run);
  }

  /** The shutdown grace is over and deliveries in work are abandoned: their timeouts' timers are cancelled. */
  giveUpTimeouts(): void {
    this.#timeoutsGivenUp.abort();
  }

  /** Aborted once the shutdown grace is over (`giveUpTimeouts`). */
  get timeoutsGivenUp(): AbortSignal {
    return this.#timeoutsGivenUp.signal;
  }

  /** A delivery failed where nothing should: logged; its row returns when its hold ends. */
  unexpected(delivery: ClaimedDelivery, error: unknown): void {
    this.#s.logger.error({ ...errorFields(error), ...this.#place, id: delivery.id }, "delivery failed unexpectedly; its row returns when its hold ends");
  }

  /** Counts a batch's settlements as one until they are written, apart from the worker. */
  apart(settlements: Promise<void>): Promise<void> {
    const counts = this.#counts;
    counts.settling++;
    return settlements.finally(() => counts.settling--);
  }

  /** Tells the observer a delivery starts (held while a settlement of the same id is written here, to keep the row's events in order). */
  delivered(delivery: ClaimedDelivery, payload: unknown): void {
    const { observer } = this.#s;
    if (observer !== undefined) this.#order.notify(delivery, () => observer.delivered({ subscription: this.#name, id: delivery.id, attempt: delivery.attempt, payload }));
  }

  /** Decodes, runs the handler and settles; `undefined` when all of it ran now (nothing left that holds the worker). */
  handle(delivery: ClaimedDelivery): Promise<void> | undefined {
    if (this.#decodesAsync || this.#s.options.transactional === true) return this.#handleLater(delivery);
    let payload: unknown;
    try {
      payload = decodePayloadNow(this.#s.spec, delivery.row, this.#placeOf, delivery.id);
    } catch (error) {
      return this.#undecodable(delivery, error);
    }
    this.delivered(delivery, payload);
    return this.#invoke(delivery, payload, undefined);
  }

  /** `handle` where decoding may be asynchronous (a Standard Schema) or a handler's transaction opens first. */
  async #handleLater(delivery: ClaimedDelivery): Promise<void> {
    const { spec, logger } = this.#s;
    let payload: unknown;
    try {
      payload = this.#decodesAsync ? await decodePayload(spec, delivery.row, this.#placeOf(delivery.id)) : decodePayloadNow(spec, delivery.row, this.#placeOf, delivery.id);
    } catch (error) {
      await this.#undecodable(delivery, error);
      return;
    }
    this.delivered(delivery, payload);
    let tx: AnyTransaction | undefined;
    if (this.#s.options.transactional === true) {
      try {
        tx = await delivery.openHandlerTransaction();
      } catch (error) {
        logger.error({ ...errorFields(error), ...this.#place, id: delivery.id }, "could not open the handler's transaction; the row is released for another attempt");
        const run = new RunningDelivery(this.#end, delivery, payload, 0, "notRun");
        // No attempt given: the handler never ran, so the cap does not turn this release into a dead letter.
        await this.#settle(run, this.#policy.runtime(HandlerOutcome.retry(), undefined));
        return;
      }
    }
    await this.#invoke(delivery, payload, tx);
  }

  /** Calls the handler (the observer saw the delivery); a returned promise is awaited, anything else settles now. */
  #invoke(delivery: ClaimedDelivery, payload: unknown, tx: AnyTransaction | undefined): Promise<void> | undefined {
    const { subscriber, clock } = this.#s;
    const limit = this.#s.options.timeout;
    // A timed handler's `ctx.tx` can be closed when its row is settled without it (the grace is over).
    const fence = limit !== undefined && tx !== undefined ? fencedTransaction(tx, () => afterTimeoutGrace(this.#placeOf(delivery.id))) : undefined;
    const ctx = deliveryContext<readonly RoleMarker[]>(this.#contextPlace, delivery, clock, fence?.tx ?? tx);
    const run = new RunningDelivery(this.#end, delivery, payload, this.#measures ? performance.now() : 0, "returned");
    let result: unknown;
    try {
      if (subscriber.kind !== "row") throw new Error("a batch subscriber's rows go through deliverBatch");
      result = subscriber.invoke(payload as never, ctx as never, this.#s.outputs);
    } catch (error) {
      return this.#threw(run, error);
    }
    if (!isPromiseLike(result)) return this.#returned(run, result);
    if (limit !== undefined) return this.#timed(run, result, limit, fence);
    return Promise.resolve(result).then(
      (value) => this.#returned(run, value),
      (error: unknown) => this.#threw(run, error),
    );
  }

  /**
   * A handler's call under its queue's timeout. Ended in time: as any other. Past the timeout its
   * signal aborts with a `Timeout`, and the row settles by the onError policy as a throw of it:
   * when the handler ends within the grace, or at the grace's end without it (its `ctx.tx`
   * closed first), in which case what it returns later is discarded and logged.
   */
  async #timed(run: RunningDelivery, running: PromiseLike<unknown>, limit: HandlerTimeout, fence: FencedTransaction | undefined): Promise<void> {
    const { delivery } = run;
    const timed = { place: this.#placeOf(delivery.id), attempt: delivery.attempt, interrupt: (reason: unknown) => delivery.interrupt(reason) };
    const { call, timeout } = await deliveryWithin(running, this.#s.clock, limit, timed, this.#s.logger, this.#timeoutsGivenUp.signal);
    if (call.ended === "returned") return this.#returned(run, call.value);
    if (call.ended === "threw") return this.#threw(run, call.error);
    fence?.close();
    this.#handlerEnded(run, "threw", timeout);
    const settlement = this.#policy.failed("handler", delivery, timeout);
    const fields = { ...this.#policy.failureFields(delivery, timeout, settlement), timeoutMs: limit.ms, graceMs: limit.graceMs };
    const fate = failureFate(settlement);
    this.#s.logger.error(fields, call.stillRunning ? `handler ignored its timeout's signal past the grace; ${fate} without waiting for it` : `handler timed out; ${fate}`);
    return this.#settle(run, settlement);
  }

  /** The handler returned `value`: its outcome is settled (a value that is no outcome is a failure). */
  #returned(run: RunningDelivery, value: unknown): Promise<void> | undefined {
    let settlement: Settlement;
    try {
      // Nothing returned is an ack, which no rule changes: its settlement is the one every ack shares.
      settlement = value === undefined ? ACKED : this.#policy.returned(run.delivery, toOutcome(value), "the handler");
    } catch (notAnOutcome) {
      return this.#threw(run, notAnOutcome);
    }
    this.#handlerEnded(run, "returned", undefined);
    if (this.#measures) this.handlerMs = movingAverage(this.handlerMs, Math.max(1e-6, run.handlerMs));
    return this.#settle(run, settlement);
  }

  /** The handler threw `error`: the onError policy decides, unless the delivery was cancelled (then it is dropped). */
  #threw(run: RunningDelivery, error: unknown): Promise<void> | undefined {
    const { delivery } = run;
    this.#handlerEnded(run, "threw", error);
    let settlement: Settlement;
    if (isSqlInboxError(delivery.abortedWith()?.reason, "Cancelled")) {
      // A cancelled delivery that stopped by throwing is dropped: it was asked to stop, so this is no failure to retry.
      settlement = this.#policy.runtime(HandlerOutcome.drop(), delivery.attempt);
      this.#cancelDrops.add(delivery);
      this.#s.logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery cancelled: its handler stopped; dropped");
    } else {
      settlement = this.#policy.failed("handler", delivery, error);
      this.#s.logger.error(this.#policy.failureFields(delivery, error, settlement), `handler failed; ${failureFate(settlement)}`);
    }
    return this.#settle(run, settlement);
  }

  #handlerEnded(run: RunningDelivery, ended: HandlerEnd, error: unknown): void {
    run.handler = ended;
    run.cause = error;
    if (run.startedAt > 0) run.handlerMs = performance.now() - run.startedAt;
  }

  /**
   * The settlement is written, apart from the worker (`undefined`: the worker is free now) or, where
   * the delivery holds a connection, with the worker waiting for it (the promise it waits for).
   */
  #settle(run: RunningDelivery, settlement: Settlement): Promise<void> | undefined {
    run.settlement = settlement;
    this.#counts.settling++;
    if (!this.#holdsWorker) {
      this.#write(run, undefined);
      return undefined;
    }
    return new Promise<void>((resolve) => this.#write(run, resolve));
  }

  /** A batch's row (`handler`: how its batch handler ended): its settlement is written; never rejects. */
  settleRow(delivery: ClaimedDelivery, settlement: Settlement, payload: unknown, handler: HandlerEnd, cause?: unknown): Promise<void> {
    const run = new RunningDelivery(this.#end, delivery, payload, 0, handler, false);
    run.cause = cause;
    run.settlement = settlement;
    return new Promise<void>((resolve) => this.#write(run, resolve));
  }

  /** Writes the run's settlement; its end (`#written`) reports, whatever happened, and calls `after` last. */
  #write(run: RunningDelivery, after: (() => void) | undefined): void {
    run.after = after;
    if (delayOf(run.settlement) !== undefined) run.from = this.#s.clock.now().getTime();
    if (this.#s.observer !== undefined) this.#order.writing(run.delivery);
    run.delivery.settle(run.settlement, run);
  }

  /** A settlement's end, told by its delivery; never throws into it: a reader's failure is logged as unexpected. */
  #written(run: RunningDelivery): void {
    const delayMs = run.written ? delayOf(run.settlement) : undefined;
    if (delayMs !== undefined) run.delay = { ms: delayMs, from: run.from };
    try {
      this.#told(run);
    } catch (unexpected) {
      this.unexpected(run.delivery, unexpected);
    }
    if (this.#s.observer !== undefined) this.#order.told(run.delivery, (unexpected) => this.unexpected(run.delivery, unexpected));
    if (run.counted) this.#counts.settling--;
    try {
      this.#ended(run);
    } catch (unexpected) {
      this.unexpected(run.delivery, unexpected);
    }
    run.after?.();
  }

  /** A settlement's end: logged and shown to the observer. */
  #told(run: RunningDelivery): void {
    const { logger, observer } = this.#s;
    const { delivery, settlement, written, error } = run;
    if (run.handler === "undecodable") {
      const undecodable = observer?.undecodable;
      if (undecodable !== undefined)
        this.#order.notify(delivery, () => undecodable({ subscription: this.#name, id: delivery.id, attempt: delivery.attempt, cause: run.cause, written, error }));
      if (!written) {
        logger.error(
          { ...errorFields(error), ...this.#place, id: delivery.id, outcome: settlement.outcome.kind },
          "could not settle an undecodable row; it returns when its hold ends",
        );
      }
      return;
    }
    const cancelled = this.#cancelDrops.delete(delivery);
    if (written) {
      if (dropsRow(settlement) && !cancelled) logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery dropped by its handler");
    } else {
      const code = isSqlInboxError(error) ? error.code : undefined;
      logger.error({ ...errorFields(error), ...this.#place, id: delivery.id, outcome: settlement.outcome.kind, code }, "settlement failed");
    }
    if (observer === undefined) return;
    const aborted = delivery.abortedWith();
    const event: SettledEvent = {
      subscription: this.#name,
      id: delivery.id,
      attempt: delivery.attempt,
      payload: run.payload,
      outcome: settlement.outcome,
      ...(written ? {} : { error }),
      signalAborted: aborted !== undefined,
      signalReason: aborted?.reason,
      settlement,
      written,
      handler: run.handler,
      cause: run.cause,
      cancelled,
      delayMs: run.delay?.ms,
      handlerMs: run.startedAt > 0 ? run.handlerMs : undefined,
    };
    this.#order.notify(delivery, () => observer.settled(event));
  }

  /**
   * A payload that cannot be decoded never reaches the handler: the onDecodeError policy decides
   * (by default the row is kept, logged with subscription, table and id, and kept out of claims
   * for `decodeRetryMs`; or moved to the dead letter where one is declared). The worker waits for it
   * only where the delivery holds a connection.
   */
  #undecodable(delivery: ClaimedDelivery, error: unknown): Promise<void> | undefined {
    const run = new RunningDelivery(this.#end, delivery, undefined, 0, "undecodable");
    run.cause = error;
    const settlement = this.#policy.failed("decode", delivery, error);
    this.#s.logger.error(this.#policy.failureFields(delivery, error, settlement), undecodableMessage(settlement));
    return this.#settle(run, settlement);
  }

  /** A batch's row whose payload cannot be decoded: as `#undecodable`, counted with its batch; never rejects. */
  parkUndecodable(delivery: ClaimedDelivery, error: unknown): Promise<void> {
    const settlement = this.#policy.failed("decode", delivery, error);
    this.#s.logger.error(this.#policy.failureFields(delivery, error, settlement), undecodableMessage(settlement));
    return this.settleRow(delivery, settlement, undefined, "undecodable");
  }

  /** What a batch handler's throw makes of one of its rows, by the onError policy. */
  onError(delivery: ClaimedDelivery, error: unknown): Settlement {
    return this.#policy.failed("handler", delivery, error);
  }

  /** The settlement of what a batch handler returned for one of its rows. */
  decided(delivery: ClaimedDelivery, outcome: HandlerOutcome, source: string): Settlement {
    return this.#policy.returned(delivery, outcome, source);
  }
}
