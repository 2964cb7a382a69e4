import { isSqlInboxError, isStandardSchema, type RoleMarker } from "@sqlinbox/core/internal";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import { deliveryContext, type ContextPlace } from "../declare/context.js";
import type { AnyTransaction } from "../drivers/database.js";
import { afterTimeoutGrace, delayWithoutColumn, noDeadLetter, Timeout } from "../errors.js";
import { defaultOnDecodeError, defaultOnError, reasonOf, type FailureContext, type FailurePolicy } from "../declare/failure-policy.js";
import { errorFields } from "../logger.js";
import { HandlerOutcome, toOutcome } from "../declare/outcome.js";
import { capOf, delayOf, dropsRow, failureFate, movesToDeadLetter, outcomeLabel, undecodableMessage } from "../claim/settlement.js";
import { decodePayload, decodePayloadNow } from "../declare/payload.js";
import type { SubscriptionSetup } from "./setup.js";
import { movingAverage } from "./claim-pacer.js";
import type { DeliveryTrace } from "../telemetry/telemetry.js";
import type { HandlerTimeout } from "../declare/queue.js";
import { callWithin, fencedTransaction, type FencedTransaction } from "./handler-timeout.js";

/** What a run tells its subscription. Functions, not methods: `settled` is passed on as a callback, unbound. */
export interface RunHooks {
  /** A settlement began, apart from its worker. */
  readonly settling: () => void;
  /** That settlement ended (written or failed): the subscription may claim again, or be idle. */
  readonly settled: () => void;
  /** A settlement was written: a stop under way counts it in its report. */
  readonly finished: () => void;
  /**
   * A settlement released its row for `ms` (written): the subscription wakes when it comes due.
   * `from` is the clock's time when the settlement began, before the write.
   */
  readonly delayed: (ms: number, from: number) => void;
}

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";

/**
 * One subscription's deliveries, each from its claimed row to its settlement: decode the payload,
 * call the handler, turn what it returned (or threw) into an outcome by the failure policies,
 * and settle it. A handler that returns without a promise runs to its end here with no promise
 * made; where the form frees the worker at once (the lease form), the settlement goes on apart
 * and reports through `RunHooks`. The subscription decides when and on which worker (`Subscription`).
 */
export class DeliveryRun {
  /** Handler time, a moving average in ms, where the subscription sizes its claims by it (`measures`). */
  handlerMs = 0;
  readonly #s: SubscriptionSetup;
  readonly #hooks: RunHooks;
  readonly #name: string;
  readonly #place: { readonly subscription: string; readonly table: string };
  /** A delivery's place, for an error (built only then). */
  readonly #placeOf: (id: unknown) => { readonly subscription: string; readonly table: string; readonly id: unknown };
  /** The place and the headers column, for delivery contexts (kept apart from `#place`, which logs spread). */
  readonly #contextPlace: ContextPlace;
  /** The payload has a Standard Schema, which may validate asynchronously. */
  readonly #decodesAsync: boolean;
  /** What a throw and an undecodable payload become. */
  readonly #onError: FailurePolicy;
  readonly #onDecodeError: FailurePolicy;
  /** The table stores a delay (a retryAfter column, or the lease column): else a `retryAfter` is parked in this process. */
  readonly #storesDelay: boolean;
  readonly #measures: boolean;
  /** The worker waits for the settlement (a delivery that holds a connection of its own). */
  readonly #holdsWorker: boolean;
  /** Aborts when the shutdown grace is over: handler timeouts still pending are dropped with their deliveries. */
  readonly #timeoutsGivenUp = new AbortController();

  constructor(setup: SubscriptionSetup, hooks: RunHooks, options: { readonly measures: boolean }) {
    this.#s = setup;
    this.#hooks = hooks;
    this.#measures = options.measures;
    this.#holdsWorker = setup.strategy.profile.holdsWorker;
    this.#name = setup.subscriber.name;
    const place = Object.freeze({ subscription: this.#name, table: setup.spec.table });
    this.#place = place;
    this.#placeOf = (id) => ({ ...place, id });
    this.#contextPlace = Object.freeze({ ...place, headersColumn: setup.spec.headers?.name });
    this.#decodesAsync = isStandardSchema(setup.spec.payloadType);
    this.#onError = setup.options.onError ?? defaultOnError();
    this.#onDecodeError = setup.options.onDecodeError ?? defaultOnDecodeError;
    this.#storesDelay = setup.strategy.profile.storesDelay;
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
    this.#s.logger.error({ ...errorFields(error), ...this.#place, id: delivery.id }, "delivery failed unexpectedly; the row returns when its hold ends");
  }

  /** What a batch handler's throw makes of one of its rows, by the onError policy. */
  onError(delivery: ClaimedDelivery, error: unknown): HandlerOutcome {
    return this.#failed(this.#onError, "handler", delivery, error);
  }

  /** What a failure's log line carries: the error, where, which attempt, and what became of the row. */
  #failureFields(delivery: ClaimedDelivery, error: unknown, outcome: HandlerOutcome) {
    return {
      ...errorFields(error),
      ...this.#place,
      id: delivery.id,
      attempt: delivery.attempt,
      outcome: outcome.kind,
      ...retryIn(outcome),
    };
  }

  /** Counts a settlement (or a batch's) until it is written, apart from the worker. */
  apart(settlement: Promise<void>): Promise<void> {
    this.#hooks.settling();
    return settlement.finally(() => this.#hooks.settled());
  }

  /** Decodes, runs the handler and settles; `undefined` when all of it ran now (nothing left that holds the worker). */
  handle(delivery: ClaimedDelivery): Promise<void> | undefined {
    const trace = this.#s.telemetry?.begin(delivery);
    if (this.#decodesAsync || this.#s.options.transactional === true) return this.#handleLater(delivery, trace);
    let payload: unknown;
    try {
      payload = decodePayloadNow(this.#s.spec, delivery.row, this.#placeOf, delivery.id);
    } catch (error) {
      return this.#undecodable(delivery, error, trace);
    }
    this.#s.observer?.delivered({ subscription: this.#name, id: delivery.id, attempt: delivery.attempt, payload });
    return this.#invoke(delivery, payload, undefined, trace);
  }

  /** `handle` where decoding may be asynchronous (a Standard Schema) or a handler's transaction opens first. */
  async #handleLater(delivery: ClaimedDelivery, trace: DeliveryTrace | undefined): Promise<void> {
    const { spec, logger } = this.#s;
    let payload: unknown;
    try {
      payload = this.#decodesAsync ? await decodePayload(spec, delivery.row, this.#placeOf(delivery.id)) : decodePayloadNow(spec, delivery.row, this.#placeOf, delivery.id);
    } catch (error) {
      await this.#undecodable(delivery, error, trace);
      return;
    }
    this.#s.observer?.delivered({ subscription: this.#name, id: delivery.id, attempt: delivery.attempt, payload });
    let tx: AnyTransaction | undefined;
    if (this.#s.options.transactional === true) {
      try {
        tx = await delivery.openHandlerTransaction();
      } catch (error) {
        logger.error({ ...errorFields(error), ...this.#place, id: delivery.id }, "could not open the handler's transaction; the row is released for another attempt");
        await this.#settleApart(delivery, HandlerOutcome.retry(), payload, trace);
        return;
      }
    }
    await this.#invoke(delivery, payload, tx, trace);
  }

  /** Parks an undecodable row; the worker waits for it only where the delivery holds a connection. */
  #undecodable(delivery: ClaimedDelivery, error: unknown, trace: DeliveryTrace | undefined): Promise<void> | undefined {
    const parked = this.apart(this.parkUndecodable(delivery, error, trace));
    return this.#holdsWorker ? parked : undefined;
  }

  /** Calls the handler (the observer saw the delivery); a returned promise is awaited, anything else settles now. */
  #invoke(delivery: ClaimedDelivery, payload: unknown, tx: AnyTransaction | undefined, trace: DeliveryTrace | undefined): Promise<void> | undefined {
    const { subscriber, clock } = this.#s;
    const limit = this.#s.options.timeout;
    // A timed handler's `ctx.tx` can be closed when its row is settled without it (the grace is over).
    const fence = limit !== undefined && tx !== undefined ? fencedTransaction(tx, () => afterTimeoutGrace(this.#placeOf(delivery.id))) : undefined;
    const ctx = deliveryContext<readonly RoleMarker[]>(this.#contextPlace, delivery, clock, fence?.tx ?? tx);
    const startedAt = trace === undefined && !this.#measures ? 0 : performance.now();
    let result: unknown;
    try {
      if (subscriber.kind !== "row") throw new Error("a batch subscriber's rows go through deliverBatch");
      result =
        trace === undefined
          ? subscriber.invoke(payload as never, this.#s.outputs, ctx as never)
          : trace.run(subscriber.invoke, subscriber, payload as never, this.#s.outputs, ctx as never);
    } catch (error) {
      return this.#handled(delivery, payload, trace, startedAt, undefined, true, error);
    }
    if (!isPromiseLike(result)) return this.#handled(delivery, payload, trace, startedAt, result, false, undefined);
    if (limit !== undefined) return this.#timed(delivery, payload, trace, startedAt, result, limit, fence);
    return Promise.resolve(result).then(
      (value) => this.#handled(delivery, payload, trace, startedAt, value, false, undefined),
      (error: unknown) => this.#handled(delivery, payload, trace, startedAt, undefined, true, error),
    );
  }

  /**
   * A handler's call under its queue's timeout. Ended in time: as any other. Past the timeout its
   * signal aborts with a `Timeout`, and the row settles by the onError policy as a throw of it:
   * when the handler ends within the grace, or at the grace's end without it (its `ctx.tx`
   * closed first), in which case what it returns later is discarded and logged.
   */
  async #timed(
    delivery: ClaimedDelivery,
    payload: unknown,
    trace: DeliveryTrace | undefined,
    startedAt: number,
    running: PromiseLike<unknown>,
    limit: HandlerTimeout,
    fence: FencedTransaction | undefined,
  ): Promise<void> {
    const { clock, logger } = this.#s;
    // Made when the timeout passes: an error's stack costs more than the rest of a delivery's bookkeeping.
    let timeout: Timeout | undefined;
    const call = await callWithin(
      running,
      clock,
      limit,
      {
        timedOut: () => {
          timeout = new Timeout(limit.ms, this.#placeOf(delivery.id));
          delivery.interrupt(timeout);
        },
        late: (ended, error) =>
          logger.warn(
            { ...(ended === "threw" ? errorFields(error) : {}), ...this.#place, id: delivery.id, attempt: delivery.attempt, timeoutMs: limit.ms, ended },
            "handler ended after its timeout's grace: its result is discarded (the row was settled without it)",
          ),
      },
      this.#timeoutsGivenUp.signal,
    );
    if (call.ended === "returned") return this.#handled(delivery, payload, trace, startedAt, call.value, false, undefined);
    if (call.ended === "threw") return this.#handled(delivery, payload, trace, startedAt, undefined, true, call.error);
    fence?.close();
    timeout ??= new Timeout(limit.ms, this.#placeOf(delivery.id));
    trace?.handled(startedAt, true, timeout);
    const outcome = this.#failed(this.#onError, "handler", delivery, timeout);
    const fields = { ...this.#failureFields(delivery, timeout, outcome), timeoutMs: limit.ms, graceMs: limit.graceMs };
    if (call.stillRunning) logger.error(fields, `handler ignored its timeout's signal past the grace; ${failureFate(outcome)} without waiting for it`);
    else logger.error(fields, `handler timed out; ${failureFate(outcome)}`);
    return this.#settleApart(delivery, outcome, payload, trace);
  }

  /** What the handler returned (or threw) becomes an outcome, which settles apart from the worker. */
  #handled(
    delivery: ClaimedDelivery,
    payload: unknown,
    trace: DeliveryTrace | undefined,
    startedAt: number,
    returned: unknown,
    threw: boolean,
    thrown: unknown,
  ): Promise<void> | undefined {
    let outcome: HandlerOutcome | undefined;
    let error = thrown;
    if (!threw) {
      try {
        outcome = this.storable(toOutcome(returned), "the handler", delivery);
        trace?.handled(startedAt, false);
        if (this.#measures) this.handlerMs = movingAverage(this.handlerMs, Math.max(1e-6, performance.now() - startedAt));
      } catch (notAnOutcome) {
        error = notAnOutcome;
      }
    }
    if (outcome === undefined && isSqlInboxError(delivery.signal.reason, "Cancelled")) {
      // A cancelled delivery that stopped by throwing is dropped: it was asked to stop, so this is no failure to retry.
      trace?.handled(startedAt, true, error);
      outcome = HandlerOutcome.drop();
      this.#s.logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery cancelled: its handler stopped; dropped");
    }
    if (outcome === undefined) {
      trace?.handled(startedAt, true, error);
      outcome = this.#failed(this.#onError, "handler", delivery, error);
      this.#s.logger.error(this.#failureFields(delivery, error, outcome), `handler failed; ${failureFate(outcome)}`);
    }
    return this.#settleApart(delivery, outcome, payload, trace);
  }

  /**
   * Counts a settlement until it is written, apart from the worker: `undefined` (the worker is free
   * now), or, where the delivery holds a connection, a promise the worker waits for.
   */
  #settleApart(delivery: ClaimedDelivery, outcome: HandlerOutcome, payload: unknown, trace: DeliveryTrace | undefined): Promise<void> | undefined {
    this.#hooks.settling();
    const apart = this.#hooks.settled; // no closure per delivery
    if (!this.#holdsWorker) {
      this.#settleThen(delivery, outcome, payload, trace, apart);
      return undefined;
    }
    return new Promise<void>((resolve) =>
      this.#settleThen(delivery, outcome, payload, trace, () => {
        apart();
        resolve();
      }),
    );
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
    const source = what === "handler" ? "the onError policy" : "the onDecodeError policy";
    try {
      const outcome = toOutcome(policy(error, delivery.attempt, ctx));
      return own ? this.storable(outcome, source, delivery, error) : this.#capped(outcome, source, delivery, error);
    } catch (policyError) {
      logger.error({ ...errorFields(policyError), ...this.#place, id: delivery.id }, `the ${what === "handler" ? "onError" : "onDecodeError"} policy failed; the default decides`);
      return this.#capped(fallback(error, delivery.attempt, ctx), source, delivery, error);
    }
  }

  /**
   * `maxAttempts` is a cap (`capOf`): an outcome that would release a row whose attempt reached it
   * moves the row to the dead letter instead, with a warning that names what it overrode.
   */
  #capped(outcome: HandlerOutcome, source: string, delivery: ClaimedDelivery, error: unknown): HandlerOutcome {
    const maxAttempts = this.#s.options.deadLetter?.maxAttempts;
    if (maxAttempts === undefined) return outcome;
    const { attempt } = delivery;
    const decided = capOf(outcome, attempt, maxAttempts, () => (error === undefined ? `attempt ${attempt} reached maxAttempts ${maxAttempts}` : reasonOf(error)));
    if (decided.overrode !== undefined) {
      const overridden = outcomeLabel(decided.overrode);
      this.#s.logger.warn(
        { ...this.#place, id: delivery.id, attempt, maxAttempts, overridden },
        `attempt ${attempt} reached maxAttempts ${maxAttempts}: the row goes to the dead letter, not ${overridden} as ${source} returned`,
      );
    }
    return decided.outcome;
  }

  /**
   * What the app's own code chose (`source`: the handler or a policy; `error`: the failure a
   * policy judged), as written: capped by `maxAttempts` first. A `retryAfter` from the app's own
   * code on a table with no column for a time does not compile; one that arrives untyped is logged as a `Declaration` error naming the column to add, and
   * served without holding anything: the row is released now and parked in this process.
   */
  storable(chosen: HandlerOutcome, source: string, delivery: ClaimedDelivery, error?: unknown): HandlerOutcome {
    const outcome = this.#capped(chosen, source, delivery, error);
    const delayMs = delayOf(outcome);
    if (delayMs === undefined || this.#storesDelay) return outcome;
    const place = this.#placeOf(delivery.id);
    this.#s.logger.error(
      { ...errorFields(delayWithoutColumn(delayMs, this.#s.strategy.profile.describedAs, source, place)), ...place },
      "retryAfter on a table with no retryAfter column: row released and parked in this process",
    );
    return outcome;
  }

  /** When a settlement of `outcome` begins: the clock's time if it delays its row (0 otherwise: no clock read per ack). */
  #delayFrom(outcome: HandlerOutcome): number {
    return delayOf(outcome) === undefined ? 0 : this.#s.clock.now().getTime();
  }

  /** A written delay: the subscription wakes when its row comes due (`from`: when the settlement began). */
  #delayed(outcome: HandlerOutcome, from: number): void {
    const ms = delayOf(outcome);
    if (ms !== undefined) this.#hooks.delayed(ms, from);
  }

  /** A dead letter needs a destination: without one the row is kept, hidden for the decode delay, and the mistake logged. */
  #keepWithoutDeadLetter(delivery: ClaimedDelivery, outcome: HandlerOutcome): HandlerOutcome {
    if (!movesToDeadLetter(outcome) || this.#s.options.deadLetter !== undefined) return outcome;
    this.#s.logger.error({ ...errorFields(noDeadLetter(this.#placeOf(delivery.id))), ...this.#place, id: delivery.id }, "no dead-letter destination: row kept");
    return HandlerOutcome.retryAfter(this.#s.decodeRetryMs);
  }

  /** Writes the outcome; never rejects (a failure is logged and shown to the observer). */
  settle(delivery: ClaimedDelivery, chosen: HandlerOutcome, payload: unknown, trace: DeliveryTrace | undefined): Promise<void> {
    return new Promise<void>((resolve) => this.#settleThen(delivery, chosen, payload, trace, resolve));
  }

  /** Writes the outcome, then calls `after`, whatever happened (a failure is logged and shown to the observer). */
  #settleThen(delivery: ClaimedDelivery, chosen: HandlerOutcome, payload: unknown, trace: DeliveryTrace | undefined, after: () => void): void {
    const outcome = this.#keepWithoutDeadLetter(delivery, chosen);
    const from = this.#delayFrom(outcome);
    const done = (ok: boolean, error?: unknown) => {
      try {
        this.#settled(delivery, outcome, payload, trace, ok, error, from);
      } catch (unexpected) {
        this.unexpected(delivery, unexpected);
      } finally {
        after();
      }
    };
    if (delivery.settleThen !== undefined) {
      delivery.settleThen(outcome, done);
      return;
    }
    let settling: Promise<void>;
    try {
      settling = delivery.settle(outcome);
    } catch (error) {
      done(false, error);
      return;
    }
    settling.then(
      () => done(true),
      (error: unknown) => done(false, error),
    );
  }

  /** A settlement's end: counted, logged, traced and shown to the observer. */
  #settled(delivery: ClaimedDelivery, outcome: HandlerOutcome, payload: unknown, trace: DeliveryTrace | undefined, ok: boolean, settleError: unknown, from: number): void {
    const { logger, observer } = this.#s;
    if (ok) {
      this.#hooks.finished();
      this.#delayed(outcome, from);
      if (dropsRow(outcome)) logger.warn({ ...this.#place, id: delivery.id, attempt: delivery.attempt }, "delivery dropped by its handler");
    } else {
      const code = isSqlInboxError(settleError) ? settleError.code : undefined;
      logger.error({ ...errorFields(settleError), ...this.#place, id: delivery.id, outcome: outcome.kind, code }, "settlement failed");
    }
    trace?.end(outcome.kind, ok ? undefined : settleError, delivery.signal);
    observer?.settled({
      subscription: this.#name,
      id: delivery.id,
      attempt: delivery.attempt,
      payload,
      outcome,
      ...(ok ? {} : { error: settleError }),
      signalAborted: delivery.signal.aborted,
    });
  }

  /**
   * A payload that cannot be decoded never reaches the handler: the onDecodeError policy decides
   * (by default the row is kept, logged with subscription, table and id, and kept out of claims
   * for `decodeRetryMs`; or moved to the dead letter where one is declared).
   */
  async parkUndecodable(delivery: ClaimedDelivery, error: unknown, trace: DeliveryTrace | undefined): Promise<void> {
    const { logger } = this.#s;
    const outcome = this.#keepWithoutDeadLetter(delivery, this.#failed(this.#onDecodeError, "decode", delivery, error));
    logger.error(this.#failureFields(delivery, error, outcome), undecodableMessage(outcome));
    const from = this.#delayFrom(outcome);
    try {
      await delivery.settle(outcome);
      this.#delayed(outcome, from);
      trace?.end("undecodable", undefined, delivery.signal);
    } catch (settleError) {
      trace?.end("undecodable", settleError, delivery.signal);
      logger.error({ ...errorFields(settleError), ...this.#place, id: delivery.id, outcome: outcome.kind }, "could not settle an undecodable row; it returns when its hold ends");
    }
  }
}

/** A retry's delay for its log line. */
function retryIn(outcome: HandlerOutcome): { retryInMs?: number } {
  const ms = delayOf(outcome);
  return ms === undefined ? {} : { retryInMs: ms };
}
