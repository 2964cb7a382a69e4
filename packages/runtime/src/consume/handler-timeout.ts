import type { KyselyPlugin } from "kysely";
import type { Clock, Timer } from "../clock.js";
import type { HandlerTimeout } from "../declare/queue.js";
import type { AnyTransaction } from "../drivers/database.js";
import { Timeout } from "../errors.js";
import { errorFields, type Logger } from "../logger.js";

/** How a handler's call ended, measured against its queue's timeout. */
export type TimedCall<T> =
  | { readonly ended: "returned"; readonly value: T }
  | { readonly ended: "threw"; readonly error: unknown }
  | {
      readonly ended: "timedOut";
      /** The grace ended first: the handler goes on, and what it returns later is discarded (`late`). */
      readonly stillRunning: boolean;
    };

/** What a timed call tells its delivery. */
export interface TimeoutHooks {
  /** The timeout passed: the delivery's signal aborts (the grace starts). */
  timedOut(): void;
  /** The handler ended after the grace, its rows already settled without it: what it did is only logged. */
  late(ended: "returned" | "threw", error: unknown): void;
}

/**
 * Waits for a handler's call under its timeout: its result when it ends in time; `timedOut` when it
 * ends after `ms` (within the grace), or once `ms + graceMs` passed while it still runs. The timers
 * run on the app's clock, so a paused test clock moves them too. `givenUp` aborting (the app's
 * shutdown grace is over and the delivery abandoned) cancels them: the call then ends when the
 * handler does, and no timer keeps a stopped app's process alive.
 */
export function callWithin<T>(running: PromiseLike<T>, clock: Clock, limit: HandlerTimeout, hooks: TimeoutHooks, givenUp?: AbortSignal): Promise<TimedCall<T>> {
  return new Promise((resolve) => {
    let state: "running" | "timedOut" | "released" = "running";
    let timer: Timer | undefined;
    const stopTimer = (): void => {
      timer?.cancel();
      timer = undefined;
    };
    const graceOver = (): void => {
      state = "released";
      timer = undefined;
      givenUp?.removeEventListener("abort", stopTimer);
      resolve({ ended: "timedOut", stillRunning: true });
    };
    if (givenUp?.aborted !== true) {
      timer = clock.setTimer(limit.ms, () => {
        state = "timedOut";
        timer = clock.setTimer(limit.graceMs, graceOver);
        hooks.timedOut();
      });
      givenUp?.addEventListener("abort", stopTimer, { once: true });
    }
    const end = (ended: "returned" | "threw", value: T | undefined, error: unknown): void => {
      if (state === "released") {
        hooks.late(ended, error);
        return;
      }
      stopTimer();
      givenUp?.removeEventListener("abort", stopTimer);
      if (state === "timedOut") resolve({ ended: "timedOut", stillRunning: false });
      else resolve(ended === "returned" ? { ended, value: value as T } : { ended, error });
    };
    running.then(
      (value) => end("returned", value, undefined),
      (error: unknown) => end("threw", undefined, error),
    );
  });
}

/** The delivery a timed handler runs for: where its log lines and its `Timeout` say it is, and how its signal aborts. */
export interface TimedDelivery {
  readonly place: { readonly subscription: string; readonly table: string; readonly id: unknown };
  readonly attempt: number | undefined;
  interrupt(reason: unknown): void;
}

/**
 * `callWithin` for one delivery: when the timeout passes, its signal aborts with a `Timeout`; a
 * handler that ends after the grace (its row settled without it) is logged. `timeout`: the
 * `Timeout` the call timed out with (made only then: an error's stack costs more than the rest of
 * a delivery's bookkeeping).
 */
export async function deliveryWithin<T>(
  running: PromiseLike<T>,
  clock: Clock,
  limit: HandlerTimeout,
  delivery: TimedDelivery,
  logger: Logger,
  givenUp: AbortSignal,
): Promise<{ readonly call: TimedCall<T>; readonly timeout: Timeout | undefined }> {
  const { place } = delivery;
  let timeout: Timeout | undefined;
  const hooks: TimeoutHooks = {
    timedOut: () => {
      timeout = new Timeout(limit.ms, place);
      delivery.interrupt(timeout);
    },
    late: (ended, error) =>
      logger.warn(
        { ...(ended === "threw" ? errorFields(error) : {}), ...place, attempt: delivery.attempt, timeoutMs: limit.ms, ended },
        "handler ended after its timeout's grace: its result is discarded (the row was settled without it)",
      ),
  };
  const call = await callWithin(running, clock, limit, hooks, givenUp);
  return { call, timeout: call.ended === "timedOut" ? (timeout ?? new Timeout(limit.ms, place)) : undefined };
}

/** A handler's `ctx.tx` that refuses statements once closed, and the closing. */
export interface FencedTransaction {
  readonly tx: AnyTransaction;
  close(): void;
}

/**
 * The view of a handler's transaction that a timed queue hands out as `ctx.tx`: once the grace
 * is over and the row is settled without the handler, its statements are refused before they
 * reach the connection (the refusal is thrown where Kysely compiles them). A statement already
 * sent runs before the settlement's own, in the connection's order, so nothing the handler
 * writes late lands in the settlement's commit, and the connection can serve others at once.
 * Kysely's own state does the rest: after the rollback or commit it refuses the transaction.
 */
export function fencedTransaction(tx: AnyTransaction, refusal: () => Error): FencedTransaction {
  let closed = false;
  const fence: KyselyPlugin = {
    transformQuery: (args) => {
      if (closed) throw refusal();
      return args.node;
    },
    transformResult: (args) => Promise.resolve(args.result),
  };
  return {
    tx: tx.withPlugin(fence),
    close: () => {
      closed = true;
    },
  };
}
