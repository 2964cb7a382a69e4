import { isSqlInboxError } from "@sqlinbox/core/internal";
import { retriedAs, settledAs } from "../claim/settlement.js";
import type { DeliveryObserver, SettledEvent } from "../consume/setup.js";
import type { HandlerOutcome } from "../declare/outcome.js";
import { errorFields, type Logger } from "../logger.js";
import type { PublishEvent, PublishObserver } from "../publish/publisher.js";
import { PublishOrder } from "./publish-order.js";

/** What every event of a job carries: where it runs and which row it is. */
export interface JobEventBase {
  /** The subscription's name (its route). */
  readonly route: string;
  readonly id: unknown;
  /** The attempt the claim counted; `undefined` on a table without an attempt column. */
  readonly attempt: number | undefined;
}

/** The events of a job's life, by name, each with what it carries. */
export interface JobEvents {
  /** A row was inserted by a publish of this app (inside a caller's transaction: at the insert, before its commit). */
  readonly published: { readonly route: string; readonly id: string; readonly created: boolean; readonly payload: unknown };
  /** A delivery was claimed and its handler is about to run. */
  readonly started: JobEventBase & { readonly payload: unknown };
  /** The ack was written: the row is done. */
  readonly succeeded: JobEventBase & { readonly durationMs: number | undefined };
  /**
   * The row went back to the queue, due again after `delayMs` (0: at once). `outcome`: `retry` (back at once)
   * or `retryAfter` (after a delay, which a backoff's jitter may make 0 ms).
   */
  readonly retried: JobEventBase & { readonly delayMs: number; readonly outcome: "retry" | "retryAfter" };
  /** The handler snoozed the row: due again after `delayMs`, its attempt not spent. */
  readonly snoozed: JobEventBase & { readonly delayMs: number };
  /** The handler threw (or timed out); the event that follows says what became of the row. */
  readonly failed: JobEventBase & { readonly error: unknown };
  /** The row was moved to its dead-letter destination. */
  readonly deadLettered: JobEventBase & { readonly reason: string | undefined };
  /** The handler returned `drop()`: the row is finished without success. */
  readonly dropped: JobEventBase;
  /** The job was cancelled while in work, and its row was dropped. */
  readonly cancelled: JobEventBase;
  /** The handler ran past its queue's timeout (followed by `failed`). */
  readonly timedOut: JobEventBase & { readonly error: unknown };
  /** The row's hold was lost before its settlement was written: another claim may run it again. `outcome`: the settlement that was not written. */
  readonly leaseLost: JobEventBase & { readonly error: unknown; readonly outcome: HandlerOutcome["kind"] };
  /**
   * The settlement could not be written for another reason than a lost hold (the database failed
   * the statement): the row returns to the queue when its hold ends. `outcome`: the settlement that was not written.
   */
  readonly settlementFailed: JobEventBase & { readonly error: unknown; readonly outcome: HandlerOutcome["kind"] };
  /**
   * The row's payload could not be decoded (`error`), so no handler ran: the queue's `onDecodeError` policy
   * settled it (kept out of claims for a while by default, or dead-lettered). `written: false`: that
   * settlement failed (`settleError`), and the row returns when its hold ends.
   */
  readonly undecodable: JobEventBase & { readonly error: unknown; readonly written: boolean; readonly settleError: unknown };
}

export type JobEventName = keyof JobEvents;

/** Every event `app.on` takes: the job events, and `claimed`, which tells of a claim rather than of one job (it has no `id`). */
export interface AppEvents extends JobEvents {
  /**
   * A claim statement of the route ran and brought `rows` rows (0: nothing was due) in `durationMs`.
   * It fires at every poll, idle ones included.
   */
  readonly claimed: { readonly route: string; readonly rows: number; readonly durationMs: number };
}

/** A listener of one event; what it returns is never awaited. */
export type JobListener<E extends keyof AppEvents> = (event: AppEvents[E]) => unknown;

/** One registered listener of one event. */
interface Registered {
  readonly event: keyof AppEvents;
  readonly listener: (event: never) => unknown;
}

type Emit = <E extends keyof AppEvents>(name: E, event: AppEvents[E]) => void;

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";

/** The listeners of one running app: each is called in registration order, never awaited; a failure is logged once per listener. */
export function lifecycleEmitter(listeners: readonly Registered[], logger: Logger): { readonly deliveries: DeliveryObserver; readonly publishes: PublishObserver } {
  const byEvent = new Map<keyof AppEvents, Registered[]>();
  for (const r of listeners) byEvent.set(r.event, [...(byEvent.get(r.event) ?? []), r]);
  const failed = new Set<Registered>();
  const fail = (r: Registered, error: unknown): void => {
    if (failed.has(r)) return;
    failed.add(r);
    logger.error({ ...errorFields(error), event: r.event }, "a job event listener failed; the job goes on as it was (logged once per listener)");
  };
  const emit: Emit = (name, event) => {
    const these = byEvent.get(name);
    if (these === undefined) return;
    for (const r of these) {
      try {
        const returned = (r.listener as (e: unknown) => unknown)(event);
        if (isPromiseLike(returned)) returned.then(undefined, (error: unknown) => fail(r, error));
      } catch (error) {
        fail(r, error);
      }
    }
  };
  // Only a listener of `published` needs it before `started`: with none, nothing is held.
  const order = byEvent.has("published") ? new PublishOrder() : undefined;
  const row = (subscription: string, id: unknown, starts: boolean, notice: () => void): void => (order === undefined ? notice() : order.notify(subscription, id, starts, notice));
  const publishes: PublishObserver = Object.assign(
    (event: PublishEvent) => {
      for (const [i, p] of event.published.entries()) emit("published", { route: event.route, id: p.id, created: p.created, payload: event.payloads[i] });
    },
    order === undefined ? {} : { publishing: order.publishing },
  );
  return {
    deliveries: {
      delivered: ({ subscription, id, attempt, payload }) => row(subscription, id, true, () => emit("started", { route: subscription, id, attempt, payload })),
      settled: (event) => row(event.subscription, event.id, false, () => settledEvents(event, emit)),
      // Absent with no listener of it: claims are then neither timed nor told.
      claimed: byEvent.has("claimed") ? ({ subscription, rows, durationMs }) => emit("claimed", { route: subscription, rows, durationMs }) : undefined,
      undecodable: byEvent.has("undecodable")
        ? ({ subscription, id, attempt, cause, written, error }) =>
            row(subscription, id, true, () => emit("undecodable", { route: subscription, id, attempt, error: cause, written, settleError: error }))
        : undefined,
    },
    publishes,
  };
}

/** The events of one settlement, in order: timedOut, failed, then what was written (or leaseLost). */
function settledEvents(event: SettledEvent, emit: Emit): void {
  const { subscription: route, id, attempt, settlement } = event;
  if (settlement === undefined || event.handler === "undecodable") return;
  const base = { route, id, attempt };
  if (event.handler === "threw" && !event.cancelled) {
    const cause = event.cause ?? event.signalReason;
    const timeout = isSqlInboxError(cause, "Timeout") ? cause : isSqlInboxError(event.signalReason, "Timeout") ? event.signalReason : undefined;
    if (timeout !== undefined) emit("timedOut", { ...base, error: timeout });
    emit("failed", { ...base, error: cause });
  }
  if (event.written !== true) {
    const failure = { ...base, error: event.error, outcome: settlement.outcome.kind };
    if (isSqlInboxError(event.error, "LeaseLost")) emit("leaseLost", failure);
    else emit("settlementFailed", failure);
    return;
  }
  const as = settledAs(settlement);
  if (event.cancelled === true) emit("cancelled", base);
  else if (as === "succeeded") emit("succeeded", { ...base, durationMs: event.handlerMs });
  else if (as === "retried") emit("retried", { ...base, delayMs: event.delayMs ?? 0, outcome: retriedAs(settlement) });
  else if (as === "snoozed") emit("snoozed", { ...base, delayMs: event.delayMs ?? 0 });
  else if (as === "deadLettered") emit("deadLettered", { ...base, reason: settlement.step.step === "deadLetter" ? settlement.step.reason : undefined });
  else emit("dropped", base);
}

/** Both observers, in order (a test's, then the listeners'). */
export function bothObservers(a: DeliveryObserver | undefined, b: DeliveryObserver | undefined): DeliveryObserver | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return {
    claimed: both(a.claimed, b.claimed),
    undecodable: both(a.undecodable, b.undecodable),
    delivered: (e) => {
      a.delivered(e);
      b.delivered(e);
    },
    settled: (e) => {
      a.settled(e);
      b.settled(e);
    },
  };
}

/** Both optional callbacks, in order; one alone as it is. */
function both<E>(a: ((e: E) => void) | undefined, b: ((e: E) => void) | undefined): ((e: E) => void) | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return (e) => {
    a(e);
    b(e);
  };
}

/** Both publish observers, in order; a publish begins and ends for both. */
export function bothPublishObservers(a: PublishObserver | undefined, b: PublishObserver | undefined): PublishObserver | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  const begins = [a.publishing, b.publishing].filter((f) => f !== undefined);
  const told = (e: PublishEvent): void => {
    a(e);
    b(e);
  };
  if (begins.length === 0) return told;
  return Object.assign(told, {
    publishing: () => {
      const ends = begins.map((begin) => begin());
      return () => {
        for (const end of ends) end();
      };
    },
  });
}

export type { Registered as RegisteredListener };
