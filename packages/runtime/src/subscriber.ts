import type { AnyInboxSpec, RolesOf } from "@sqlinbox/core/internal";
import type { InboxContext } from "./context.js";
import type { HandlerOutcome } from "./outcome.js";
import type { DeliveredOf, InboxQueue } from "./queue.js";

/** What a handler can send on: publishes through the broker its subscription runs on. */
export interface Outputs {
  /** Publishes a payload to a route of the same broker. */
  publish(route: string, payload: unknown): Promise<void>;
}

/** What a handler may return: an outcome, or nothing for ack. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler written as `async (p) => { … }` returns Promise<void>, which means ack
export type HandlerResult = HandlerOutcome | void | undefined;

/** The function form: `(payload, ctx) => HandlerOutcome.ack()`; in row mode `payload` is the row. */
export type HandlerFunction<S extends AnyInboxSpec> = (payload: DeliveredOf<S>, ctx: InboxContext<RolesOf<S>>) => HandlerResult | Promise<HandlerResult>;

/**
 * The class form: a type that handles a table's payloads and extracts what it needs from the
 * context itself (`Ctx(keys.attempt).from(ctx)`).
 *
 * @example
 * class Render implements Handler<typeof RenderReport> {
 *   async handle(report: Report, outs: Outputs, ctx: InboxContext<RolesOf<typeof RenderReport>>) { … }
 * }
 */
export interface Handler<S extends AnyInboxSpec> {
  handle(payload: DeliveredOf<S>, outs: Outputs, ctx: InboxContext<RolesOf<S>>): HandlerResult | Promise<HandlerResult>;
}

/** A queue with its handler, ready for `b.include(…)`. */
export interface Subscriber<S extends AnyInboxSpec = AnyInboxSpec> {
  readonly queue: InboxQueue<S>;
  /** The subscription's name (the queue's route name). */
  readonly name: string;
  readonly invoke: (payload: DeliveredOf<S>, outs: Outputs, ctx: InboxContext<RolesOf<S>>) => HandlerResult | Promise<HandlerResult>;
}

/**
 * Subscribes a handler to a queue, as a function or as an object implementing `Handler`.
 *
 * @example
 * const render = subscriber(InboxQueue.of(RenderReport, "reports").lease(minutes(1)), async (report, ctx) => {
 *   if (ctx.get(keys.attempt) > 1) log.warn("rendering again after a lost attempt");
 *   await draw(report);
 *   return HandlerOutcome.ack();
 * });
 */
export function subscriber<S extends AnyInboxSpec>(queue: InboxQueue<S>, handler: HandlerFunction<S> | Handler<S>): Subscriber<S> {
  const invoke: Subscriber<S>["invoke"] =
    typeof handler === "function" ? (payload, _outs, ctx) => handler(payload, ctx) : (payload, outs, ctx) => handler.handle(payload, outs, ctx);
  return Object.freeze({ queue, name: queue.name, invoke });
}
