import type { ClaimedDelivery, SettleDone } from "../claim/claim-strategy.js";
import type { Settlement } from "../claim/settlement.js";
import type { DeliveryTrace } from "../telemetry/telemetry.js";

/** How a delivery's handler ended: it returned, threw (a timeout and a cancel included), or never ran (an undecodable payload, a transaction that would not open). */
export type HandlerEnd = "returned" | "threw" | "undecodable" | "notRun";

/** How a delivery ended, told once to its subscription when its settlement was written or failed. */
export interface DeliveryReport {
  readonly delivery: ClaimedDelivery;
  readonly handler: HandlerEnd;
  /** The settlement decided for it, once. */
  readonly settlement: Settlement;
  /** The settlement was written; `error`: why not. */
  readonly written: boolean;
  readonly error: unknown;
  /** The handler's time in ms where something measures it (telemetry, the claim pacer); else 0. */
  readonly handlerMs: number;
  /** Written, and its row released for later: `ms`, counted from `from` (the clock's time as the settlement began). */
  readonly delay: { readonly ms: number; readonly from: number } | undefined;
}

/**
 * One delivery from its handler's call to its report, which it then is. It is what its delivery
 * tells when the settlement was written (`settled`): no closure is made per delivery.
 */
export class RunningDelivery implements DeliveryReport, SettleDone {
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
    readonly trace: DeliveryTrace | undefined,
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
