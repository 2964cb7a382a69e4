import type { AnyInboxSpec, RolesOf, SpecError } from "@sqlinbox/core/internal";
import type { Transaction } from "kysely";
import type { BatchContext, ContextOf, InboxContext } from "./context.js";
import { transactionalBatchRefused } from "../errors.js";
import type { HandlerOutcome } from "./outcome.js";
import type { InboxQueue } from "./queue.js";
import type { DelayChecked, DeliveredOf, OutcomeFor, OutcomeWithoutDelay } from "./queue-rules.js";

/** What a handler can send on: publishes through the broker its subscription runs on. */
export interface Outputs {
  /** Publishes a payload to a route of the same broker. */
  publish(route: string, payload: unknown): Promise<void>;
}

/** What a handler may return: an outcome, or nothing for ack. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler written as `async (p) => { … }` returns Promise<void>, which means ack
export type HandlerResult = HandlerOutcome | void | undefined;

/** What a batch handler may return: one outcome per row (in the order of the payloads), or one for all. */
type BatchResult = HandlerResult | readonly HandlerResult[];

/**
 * What a handler of `S`'s table may return: an outcome the table can store (`OutcomeFor`: no
 * `retryAfter` on a row-lock or advisory table without a retryAfter column), or nothing for ack.
 */
export type HandlerResultFor<S extends AnyInboxSpec> = OutcomeFor<S> extends OutcomeWithoutDelay<infer Rule> ? ResultWithoutDelay<Rule> : HandlerResult;

/** What a handler of a table without a place for a delay may return, named after the delay rule (see `OutcomeWithoutDelay`). */
// biome-ignore lint/suspicious/noConfusingVoidType: as in HandlerResult, Promise<void> means ack
type ResultWithoutDelay<Rule extends string> = OutcomeWithoutDelay<Rule> | void | undefined;

/** What a batch handler of `S`'s table may return: one storable outcome per row, or one for all. */
type BatchResultFor<S extends AnyInboxSpec> = OutcomeFor<S> extends OutcomeWithoutDelay<infer Rule> ? BatchResultWithoutDelay<Rule> : BatchResult;

/** What a batch handler of a table without a place for a delay may return, named after the delay rule (see `OutcomeWithoutDelay`). */
type BatchResultWithoutDelay<Rule extends string> = ResultWithoutDelay<Rule> | readonly ResultWithoutDelay<Rule>[];

/**
 * The function form: `(payload, ctx) => HandlerOutcome.ack()`; in row mode `payload` is the row.
 * `Tx` is the queue's transaction mode: on a `.transactional<DB>()` queue `ctx.tx` is a `Transaction<DB>`.
 */
export type HandlerFunction<S extends AnyInboxSpec, Tx = never> = (payload: DeliveredOf<S>, ctx: ContextOf<RolesOf<S>, Tx>) => HandlerResultFor<S> | Promise<HandlerResultFor<S>>;

/** The batch form: every payload of a claim at once, with each row's context in `ctx.rows`. */
type BatchHandlerFunction<S extends AnyInboxSpec> = (payloads: readonly DeliveredOf<S>[], ctx: BatchContext<RolesOf<S>>) => BatchResultFor<S> | Promise<BatchResultFor<S>>;

/**
 * The class form: a type that handles a table's payloads and extracts what it needs from the
 * context itself (`Ctx(keys.attempt).from(ctx)`).
 *
 * @example
 * class Render implements Handler<typeof RenderReport> {
 *   async handle(report: Report, outs: Outputs, ctx: InboxContext<RolesOf<typeof RenderReport>>) { … }
 * }
 */
export interface Handler<S extends AnyInboxSpec, Tx = never> {
  handle(payload: DeliveredOf<S>, outs: Outputs, ctx: ContextOf<RolesOf<S>, Tx>): HandlerResultFor<S> | Promise<HandlerResultFor<S>>;
}

interface SubscriberOf<S extends AnyInboxSpec> {
  readonly queue: InboxQueue<S, unknown>;
  /** The subscription's name (the queue's route name). */
  readonly name: string;
}

/** A handler of one row at a time. */
interface RowSubscriber<S extends AnyInboxSpec = AnyInboxSpec> extends SubscriberOf<S> {
  readonly kind: "row";
  /**
   * Called per row as `invoke(payload, ctx, outs)`: a function handler is its own `invoke` (it reads
   * `(payload, ctx)`); the class form's `handle(payload, outs, ctx)` is called through an adapter.
   */
  readonly invoke: (payload: DeliveredOf<S>, ctx: InboxContext<RolesOf<S>>, outs: Outputs) => HandlerResult | Promise<HandlerResult>;
}

/** A handler of every row of a claim at once (`subscriber.batch`). */
export interface BatchSubscriber<S extends AnyInboxSpec = AnyInboxSpec> extends SubscriberOf<S> {
  readonly kind: "batch";
  readonly invoke: BatchHandlerFunction<S>;
}

/** A queue with its handler, ready for `b.include(…)`. */
export type Subscriber<S extends AnyInboxSpec = AnyInboxSpec> = RowSubscriber<S> | BatchSubscriber<S>;

/** `unknown` unless the queue is transactional, which a batch handler refuses. */
type BatchAllowed<Tx> = [Tx] extends [never]
  ? unknown
  : Tx extends Transaction<unknown>
    ? SpecError<"a batch handler cannot be transactional: its rows have one outcome each, its writes one transaction; drop .transactional() or use a per-row handler">
    : unknown;

function subscribeRows<S extends AnyInboxSpec, Tx = never>(queue: InboxQueue<S, Tx>, handler: DelayChecked<S, HandlerFunction<S, Tx> | Handler<S, Tx>>): Subscriber<S> {
  // A function handler is called as it is, with no adapter in between (one call less per row).
  const invoke: RowSubscriber<S>["invoke"] =
    typeof handler === "function" ? (handler as unknown as RowSubscriber<S>["invoke"]) : (payload, ctx, outs) => handler.handle(payload, outs, ctx as ContextOf<RolesOf<S>, Tx>);
  return Object.freeze({ kind: "row", queue, name: queue.name, invoke });
}

/**
 * Subscribes a batch handler: it receives the payloads of one claim (up to `batch(n)` rows) and
 * returns one outcome per row, or one for all. In the row-lock form the batch is one transaction:
 * its settlements commit together, and a failed commit (`BatchRolledBack`) returns every row.
 * Lease and advisory settle each row on its own. A transactional queue is refused.
 *
 * @example
 * const mail = subscriber.batch(InboxQueue.of(MailJobs, "mail").batch(64), async (mails, ctx) => {
 *   const sent = await sendAll(mails);
 *   return sent.map((ok) => (ok ? HandlerOutcome.ack() : HandlerOutcome.retryAfter(seconds(30))));
 * });
 */
function subscribeBatch<S extends AnyInboxSpec, Tx = never>(
  allowed: BatchAllowed<Tx> extends SpecError<string> ? BatchAllowed<Tx> : InboxQueue<S, Tx>,
  handler: DelayChecked<S, BatchHandlerFunction<S>>,
): Subscriber<S> {
  const queue = allowed as InboxQueue<S, Tx>;
  if (queue.options.transactional === true) throw transactionalBatchRefused(queue.name);
  return Object.freeze({ kind: "batch", queue, name: queue.name, invoke: handler });
}

/**
 * Subscribes a handler to a queue, as a function or as an object implementing `Handler`;
 * `subscriber.batch(queue, handler)` subscribes a batch handler.
 *
 * @example
 * const render = subscriber(InboxQueue.of(RenderReport, "reports").lease(minutes(1)), async (report, ctx) => {
 *   if (ctx.get(keys.attempt) > 1) log.warn("rendering again after a lost attempt");
 *   await draw(report);
 *   return HandlerOutcome.ack();
 * });
 */
export const subscriber: typeof subscribeRows & { readonly batch: typeof subscribeBatch } = Object.assign(subscribeRows, { batch: subscribeBatch });
