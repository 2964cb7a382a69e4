import type { AnyInboxSpec, RoleMarker, RolesOf } from "@sqlinbox/core/internal";
import { type BatchContext, type InboxContext, keys } from "../declare/context.js";
import { type HandlerOutcome, toOutcome } from "../declare/outcome.js";
import type { DeliveredOf } from "../declare/queue-rules.js";
import type { HandlerResult, Subscriber } from "../declare/subscriber.js";

/** One row on its way to a per-row handler, as a middleware sees it. */
export interface RowDelivery<P = unknown> {
  readonly kind: "row";
  /** The subscription's name (its route). */
  readonly route: string;
  readonly id: unknown;
  /** The attempt the claim counted; `undefined` on a table without an attempt column. */
  readonly attempt: number | undefined;
  readonly payload: P;
}

/** The rows of one claim on their way to a batch handler. */
export interface BatchDelivery<P = unknown> {
  readonly kind: "batch";
  readonly route: string;
  readonly ids: readonly unknown[];
  readonly payloads: readonly P[];
}

/** What a middleware is given: one row, or a batch (`kind` tells which). */
export type Delivery<P = unknown> = RowDelivery<P> | BatchDelivery<P>;

/** What a middleware (and `next`) answers: a row's outcome, or a batch's (one per row, or one for all). */
export type DeliveryResult = HandlerOutcome | HandlerResult | readonly HandlerResult[];

/**
 * A function around each delivery of the routes it is given: `next()` runs the rest of the chain
 * and the handler, and resolves to what it returned (a row's is always a `HandlerOutcome`: nothing
 * returned reads as `ack()`). What the middleware returns is the delivery's outcome; a throw counts
 * as the handler throwing (the queue's `onError` policy decides). `P` is the route's payload type.
 */
export type Middleware<P = unknown, R extends readonly RoleMarker[] = readonly RoleMarker[]> = (
  delivery: Delivery<P>,
  ctx: InboxContext<R> | BatchContext<R>,
  next: () => Promise<DeliveryResult>,
) => DeliveryResult | Promise<DeliveryResult>;

/** The middleware of a route of `S`'s table: the payload (or row) and the context its handlers get. */
export type MiddlewareFor<S extends AnyInboxSpec> = Middleware<DeliveredOf<S>, RolesOf<S>>;

/** One `use`: every route (`route` undefined), one route, or every route under a prefix (`"reports.*"`). */
export interface MiddlewareUse {
  readonly route: string | undefined;
  readonly middleware: Middleware<never, never>;
}

/** Whether a `use` applies to the subscription `name`. */
function applies(route: string | undefined, name: string): boolean {
  if (route === undefined || route === name) return true;
  return route.endsWith(".*") && name.startsWith(route.slice(0, -1));
}

type AnyMiddleware = (delivery: Delivery, ctx: unknown, next: () => Promise<DeliveryResult>) => DeliveryResult | Promise<DeliveryResult>;

/**
 * The subscriber with its middleware around its handler, first registered outermost; the
 * subscriber itself when none applies (its deliveries then pay nothing for middleware).
 */
export function withMiddleware(sub: Subscriber, uses: readonly MiddlewareUse[]): Subscriber {
  const chain = uses.filter((u) => applies(u.route, sub.name)).map((u) => u.middleware as unknown as AnyMiddleware);
  if (chain.length === 0) return sub;
  const route = sub.name;
  const run = (i: number, delivery: Delivery, ctx: unknown, inner: () => unknown, row: boolean): Promise<DeliveryResult> => {
    const mw = chain[i];
    if (mw === undefined) return Promise.resolve(inner()).then((value) => (row ? toOutcome(value) : (value as DeliveryResult)));
    return Promise.resolve(mw(delivery, ctx, () => run(i + 1, delivery, ctx, inner, row)));
  };
  if (sub.kind === "row") {
    const handler = sub.invoke;
    return Object.freeze({
      ...sub,
      invoke: (payload: unknown, ctx: InboxContext, outs: Parameters<typeof handler>[2]) => {
        const delivery: RowDelivery = { kind: "row", route, id: ctx.id, attempt: ctx.get(keys.attempt as never) as number | undefined, payload };
        return run(0, delivery, ctx, () => handler(payload as never, ctx as never, outs), true) as Promise<HandlerResult>;
      },
    });
  }
  const handler = sub.invoke;
  return Object.freeze({
    ...sub,
    invoke: ((payloads: readonly unknown[], ctx: BatchContext) => {
      const delivery: BatchDelivery = { kind: "batch", route, ids: ctx.rows.map((r) => r.id), payloads };
      return run(0, delivery, ctx, () => handler(payloads as never, ctx as never), false);
    }) as typeof handler,
  });
}
