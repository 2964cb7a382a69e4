import type { ErrorPlace, InboxDescription } from "@sqlinbox/core";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery } from "kysely";
import { alreadySettled, closedBeforeHeldSettlement, stoppedInRetryHold, type HeldThing } from "../errors.js";
import type { HandlerOutcome } from "../outcome.js";
import type { ClaimedDelivery, ClaimSetup } from "./claim-strategy.js";

/**
 * What differs between the forms that hold a row for a delivery's whole run: how the hold is
 * given back and how the settlement is written. Row lock holds the claim's transaction, advisory
 * the key's lock on a session of its own.
 */
export interface DeliveryHold {
  readonly held: HeldThing;
  /** The settlement came after the broker closed or the delivery was abandoned: what is left to give back. */
  closedBeforeSettle(): Promise<void>;
  /** Gives the hold back unsettled (a stop ended a retry hold); may reject, the caller ignores it. */
  release(): Promise<unknown>;
  /** Gives the hold back at once, not waiting (the shutdown grace is over); never rejects. */
  abandon(): void;
  /** Writes the outcome on the hold and ends it; throws when the hold was lost. */
  settle(outcome: HandlerOutcome): Promise<void>;
}

/** One held row as a delivery. */
export interface HeldRow {
  readonly id: unknown;
  readonly row: RawRow;
  readonly attempt: number | undefined;
  readonly place: ErrorPlace;
}

/**
 * The delivery of a held row: `held` until `settle` (→ `settling` → `done`) or `abandon`
 * (→ `abandoned`); one settlement at most; a stop during a retry hold gives the hold back.
 */
export function heldDelivery(setup: Pick<ClaimSetup, "spec" | "clock" | "isClosed">, claimed: HeldRow, hold: DeliveryHold): ClaimedDelivery {
  const { id, row, attempt, place } = claimed;
  const controller = new AbortController();
  let state: "held" | "settling" | "done" | "abandoned" = "held";
  return {
    id,
    row,
    attempt,
    signal: controller.signal,
    leaseDeadline: () => undefined,
    settle: async (outcome) => {
      if (state === "abandoned" || setup.isClosed()) {
        try {
          await hold.closedBeforeSettle();
        } finally {
          state = "done";
        }
        throw closedBeforeHeldSettlement(outcome.kind, hold.held, place);
      }
      if (state !== "held") throw alreadySettled(place);
      state = "settling";
      try {
        await holdForRetry(setup, outcome, controller.signal);
        if (controller.signal.aborted) {
          await hold.release().catch(() => undefined);
          throw stoppedInRetryHold(outcome.kind, hold.held, place);
        }
        await hold.settle(outcome);
      } finally {
        state = "done";
      }
    },
    abandon: (reason) => {
      if (state === "settling") controller.abort(reason); // ends a retryAfter hold; the settlement gives up
      if (state !== "held") return;
      state = "abandoned";
      controller.abort(reason);
      // The grace period is over: the hold ends now, so the row returns at once.
      hold.abandon();
    },
  };
}

/**
 * `retryAfter(ms)` on a table without a retryAfter column (an undecodable payload, say), in a
 * form that holds the row: there is no column to hide the row in, so the delivery keeps holding
 * it for `ms` and then releases it, rather than letting it come straight back.
 */
export async function holdForRetry(setup: Pick<ClaimSetup, "spec" | "clock">, outcome: HandlerOutcome, signal: AbortSignal): Promise<void> {
  if (outcome.kind !== "retryAfter" || setup.spec.retryAfter !== undefined) return;
  await setup.clock.sleep(outcome.ms, signal).catch(() => undefined);
}

/** Deliveries claimed but never started (the app stopped first) give their hold back at once. */
export async function abandonUnstarted(deliveries: readonly ClaimedDelivery[]): Promise<void> {
  for (const delivery of deliveries) delivery.abandon(new Error("the app stopped before the delivery started"));
}

/** The settlement statements both held forms share the shape of. */
interface HeldSettlements {
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  settleRetry(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery | null;
}

/** The statement that writes `outcome` for a held row (null: nothing to write but the release). */
export function heldSettlement(statements: HeldSettlements, spec: InboxDescription, id: unknown, outcome: HandlerOutcome, now: Date): CompiledQuery | null {
  if (outcome.kind === "ack" || outcome.kind === "drop") return statements.settleAck(spec, id, now);
  return statements.settleRetry(spec, id, outcome.kind === "retryAfter" && spec.retryAfter !== undefined ? new Date(now.getTime() + outcome.ms) : null);
}
