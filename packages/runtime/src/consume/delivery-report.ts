import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import type { Settlement } from "../claim/settlement.js";

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
