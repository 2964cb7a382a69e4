import { type ErrorPlace, type InboxDescription, isStandardSchema, type RoleMarker } from "@sqlinbox/core/internal";
import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import type { Clock } from "../clock.js";
import { batchContext, type ContextPlace } from "../declare/context.js";
import { batchOutcomesMismatch, Timeout } from "../errors.js";
import { errorFields, type Logger } from "../logger.js";
import { type HandlerOutcome, toOutcome } from "../declare/outcome.js";
import { decodePayload, decodePayloadNow } from "../declare/payload.js";
import type { BatchSubscriber } from "../declare/subscriber.js";
import type { DeliveryRun, HandlerEnd } from "./delivery-run.js";
import { ACKED, type Settlement } from "../claim/settlement.js";
import type { SubscriptionSetup } from "./setup.js";
import type { HandlerTimeout } from "../declare/queue.js";
import { callWithin } from "./handler-timeout.js";

/** What one batch delivery needs of its subscription. */
export interface BatchRun {
  readonly subscriber: BatchSubscriber;
  readonly spec: InboxDescription;
  readonly place: { readonly subscription: string; readonly table: string };
  /** A row's place, for an error (built only then). */
  readonly placeOf: (id: unknown) => ErrorPlace;
  /** The payload has a Standard Schema, whose check may be asynchronous; without one each row decodes synchronously. */
  readonly decodesAsync: boolean;
  /** Where each row's context reads its headers (`keys.headers`): the place and the headers column. */
  readonly contextPlace: ContextPlace;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Tells the observer a row is delivered (in order behind a settlement of the same id being written). */
  delivered(delivery: ClaimedDelivery, payload: unknown): void;
  /** The queue's timeout, for the whole call of the batch handler. */
  readonly timeout?: HandlerTimeout | undefined;
  /** Aborts when the shutdown grace is over: pending timeouts are dropped with their deliveries. */
  readonly timeoutsGivenUp: AbortSignal;
  /** Writes one row's settlement (`handler`: how the batch handler ended); never rejects. */
  settle(delivery: ClaimedDelivery, settlement: Settlement, payload: unknown, handler: HandlerEnd, cause?: unknown): Promise<void>;
  /** Keeps a row whose payload cannot be decoded (the subscription's policy); never rejects. */
  park(delivery: ClaimedDelivery, error: unknown): Promise<void>;
  /** What a handler's throw becomes for one row (the subscription's onError policy). */
  onError(delivery: ClaimedDelivery, error: unknown): Settlement;
  /** The settlement of one row's outcome as the handler returned it (a delay the table cannot store is logged). */
  returned(delivery: ClaimedDelivery, outcome: HandlerOutcome): Settlement;
}

/** What a batch handler's deliveries need, from its subscription's setup and delivery run. */
export function batchRunOf(setup: SubscriptionSetup, run: DeliveryRun): BatchRun {
  const { subscriber } = setup;
  if (subscriber.kind !== "batch") throw new Error("a per-row subscriber's rows go through DeliveryRun");
  const place = Object.freeze({ subscription: subscriber.name, table: setup.spec.table });
  return {
    subscriber,
    spec: setup.spec,
    place,
    placeOf: (id) => ({ ...place, id }),
    decodesAsync: isStandardSchema(setup.spec.payloadType),
    contextPlace: Object.freeze({ subscription: subscriber.name, table: setup.spec.table, headersColumn: setup.spec.headers?.name }),
    clock: setup.clock,
    logger: setup.logger,
    delivered: (d, payload) => run.delivered(d, payload),
    timeout: setup.options.timeout,
    timeoutsGivenUp: run.timeoutsGivenUp,
    settle: (d, settlement, payload, handler, cause) => run.settleRow(d, settlement, payload, handler, cause),
    park: (d, error) => run.parkUndecodable(d, error),
    onError: (d, error) => run.onError(d, error),
    returned: (d, outcome) => run.decided(d, outcome, "the batch handler"),
  };
}

/**
 * One outcome per row from what a batch handler returned: an array of the rows' length, in
 * order, or one outcome (or nothing: ack) for all.
 */
export function batchOutcomes(result: unknown, rows: number, place: ErrorPlace): HandlerOutcome[] {
  if (!Array.isArray(result)) return new Array<HandlerOutcome>(rows).fill(toOutcome(result));
  if (result.length !== rows) throw batchOutcomesMismatch(result.length, rows, place);
  return result.map(toOutcome);
}

/**
 * Delivers the rows of one claim to a batch handler and settles each by its outcome. A row
 * that cannot be decoded is kept apart and never reaches the handler; a throw (or a wrong
 * number of outcomes) goes through the onError policy for every row. Resolves once every settlement is written (in the
 * row-lock form: once the batch's transaction committed or rolled back).
 */
export async function deliverBatch(run: BatchRun, deliveries: readonly ClaimedDelivery[]): Promise<void> {
  const { spec, place, placeOf, logger } = run;
  const ready: ClaimedDelivery[] = [];
  const payloads: unknown[] = [];
  const parked: Promise<void>[] = [];
  for (const delivery of deliveries) {
    try {
      payloads.push(run.decodesAsync ? await decodePayload(spec, delivery.row, placeOf(delivery.id)) : decodePayloadNow(spec, delivery.row, placeOf, delivery.id));
      ready.push(delivery);
    } catch (error) {
      parked.push(run.park(delivery, error));
    }
  }
  let settlements: Settlement[] = [];
  let handler: HandlerEnd = "returned";
  let cause: unknown;
  if (ready.length > 0) {
    for (const [i, d] of ready.entries()) run.delivered(d, payloads[i]);
    try {
      const ctx = batchContext<readonly RoleMarker[]>(run.contextPlace, ready, run.clock);
      const called = run.subscriber.invoke(payloads as never, ctx as never);
      const timedOut = run.timeout === undefined ? undefined : await batchWithin(run, run.timeout, ready, Promise.resolve(called));
      if (timedOut !== undefined) {
        handler = "threw";
        settlements = timedOut;
      } else {
        const result = await called;
        // Nothing returned acks every row, which no rule changes: the settlement every ack shares.
        settlements =
          result === undefined
            ? new Array<Settlement>(ready.length).fill(ACKED)
            : batchOutcomes(result, ready.length, place).map((o, i) => run.returned(ready[i] as ClaimedDelivery, o));
      }
    } catch (error) {
      handler = "threw";
      cause = error;
      settlements = ready.map((d) => run.onError(d, error));
      logger.error(
        { ...errorFields(error), ...place, ids: ready.map((d) => d.id), outcomes: settlements.map((s) => s.outcome.kind) },
        "batch handler failed; its rows settle by the onError policy",
      );
    }
  }
  await Promise.all([
    ...parked,
    ...ready.map((d, i) => run.settle(d, settlements[i] as Settlement, payloads[i], handler, handler === "threw" ? (cause ?? d.abortedWith()?.reason) : undefined)),
  ]);
}

/**
 * A batch handler's call under its queue's timeout, which counts for the whole call: past it, every
 * row's signal aborts with its own `Timeout`, and every row settles by the onError policy as a throw
 * of it, when the handler ends within the grace or at the grace's end without it (what it returns
 * later is discarded and logged). `undefined` when the call ended in time (it is then awaited as usual).
 */
async function batchWithin(run: BatchRun, limit: HandlerTimeout, ready: readonly ClaimedDelivery[], called: PromiseLike<unknown>): Promise<Settlement[] | undefined> {
  const { place, logger } = run;
  // Made when the timeout passes, one per row (each names its row).
  let timeouts: Timeout[] | undefined;
  const timeoutsOf = (): Timeout[] => (timeouts ??= ready.map((d) => new Timeout(limit.ms, { ...place, id: d.id })));
  const ids = ready.map((d) => d.id);
  const call = await callWithin(
    called,
    run.clock,
    limit,
    {
      timedOut: () => {
        const reasons = timeoutsOf();
        for (const [i, d] of ready.entries()) d.interrupt(reasons[i]);
      },
      late: (ended, error) =>
        logger.warn(
          { ...(ended === "threw" ? errorFields(error) : {}), ...place, ids, timeoutMs: limit.ms, ended },
          "batch handler ended after its timeout's grace: its result is discarded (its rows were settled without it)",
        ),
    },
    run.timeoutsGivenUp,
  );
  if (call.ended !== "timedOut") return undefined;
  const reasons = timeoutsOf();
  const settlements = ready.map((d, i) => run.onError(d, reasons[i]));
  logger.error(
    { ...errorFields(reasons[0]), ...place, ids, outcomes: settlements.map((s) => s.outcome.kind), timeoutMs: limit.ms, graceMs: limit.graceMs },
    call.stillRunning
      ? "batch handler ignored its timeout's signal past the grace; its rows settle by the onError policy without waiting for it"
      : "batch handler timed out; its rows settle by the onError policy",
  );
  return settlements;
}
