/** What a handler decided about its delivery. */
export type HandlerOutcome = { readonly kind: "ack" } | { readonly kind: "retry" } | { readonly kind: "drop" } | { readonly kind: "retryAfter"; readonly ms: number };

const ack: HandlerOutcome = Object.freeze({ kind: "ack" });
const retry: HandlerOutcome = Object.freeze({ kind: "retry" });
const drop: HandlerOutcome = Object.freeze({ kind: "drop" });

/**
 * The outcomes a handler returns. Returning nothing means `ack()`; throwing is a failure,
 * which releases the row for another attempt (`retry()`) and is logged.
 *
 * - `ack()`: done; the row is deleted (or marked, with a processedAt column).
 * - `drop()`: finished without success; the row is deleted like an ack, and a warning is logged.
 * - `retry()`: back in the queue at once; the attempt is counted at the next claim.
 * - `retryAfter(ms)`: back in the queue after `ms` (written to the lease column when the table has no retryAfter column).
 */
export const HandlerOutcome = Object.freeze({
  ack: (): HandlerOutcome => ack,
  retry: (): HandlerOutcome => retry,
  drop: (): HandlerOutcome => drop,
  retryAfter: (ms: number): HandlerOutcome => {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`retryAfter needs a duration in ms >= 0, got ${ms}`);
    return Object.freeze({ kind: "retryAfter", ms });
  },
});

/** Reads what a handler returned: `undefined` is an ack. */
export function toOutcome(value: unknown): HandlerOutcome {
  if (value === undefined || value === null) return ack;
  if (typeof value === "object" && "kind" in value) {
    const kind = (value as { kind: unknown }).kind;
    if (kind === "ack" || kind === "retry" || kind === "drop" || kind === "retryAfter") return value as HandlerOutcome;
  }
  throw new TypeError(`a handler returned ${JSON.stringify(value)}: return a HandlerOutcome (ack, retry, drop, retryAfter) or nothing`);
}
