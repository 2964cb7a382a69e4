import type { ErrorPlace, InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, ControlledTransaction } from "kysely";
import type { AnyTransaction } from "../database.js";
import { alreadySettled, closedBeforeHeldSettlement, stoppedInRetryHold, type HeldThing } from "../errors.js";
import type { Clock } from "../clock.js";
import type { HandlerOutcome } from "../outcome.js";
import type { ClaimedDelivery, ClaimSetup } from "./claim-strategy.js";

/**
 * What differs between the forms that hold a row for a delivery's whole run: how the hold is
 * given back and how the settlement is written. Row lock holds the claim's transaction, advisory
 * the key's lock on a session of its own. One per claim strategy; `H` is what one delivery holds.
 */
export interface HoldingForm<H> {
  readonly held: HeldThing;
  readonly spec: InboxDescription;
  readonly clock: Clock;
  isClosed(): boolean;
  /** The settlement came after the broker closed or the delivery was abandoned: what is left to give back. */
  closedBeforeSettle(delivery: HeldDelivery<H>): Promise<void>;
  /** Gives the hold back unsettled (a stop ended a retry hold); may reject, the caller ignores it. */
  release(delivery: HeldDelivery<H>): Promise<unknown>;
  /** Gives the hold back at once, not waiting (the shutdown grace is over); never rejects. */
  abandon(delivery: HeldDelivery<H>): void;
  /** Writes the outcome on the hold and ends it (committing the handler's writes on an ack); throws when the hold was lost. */
  settle(delivery: HeldDelivery<H>, outcome: HandlerOutcome): Promise<void>;
  /** Transactional mode: opens the handler's transaction on the hold (a savepoint, or a transaction on the lock's session). */
  openHandlerTransaction?(delivery: HeldDelivery<H>): Promise<HandlerTransaction>;
}

// biome-ignore lint/suspicious/noExplicitAny: the handler's transaction runs on any database interface, with any savepoints
export type HandlerTransaction = ControlledTransaction<any, any>;

/**
 * The delivery of a held row: `held` until `settle` (→ `settling` → `done`) or `abandon`
 * (→ `abandoned`); one settlement at most; a stop during a retry hold gives the hold back.
 */
export class HeldDelivery<H> implements ClaimedDelivery {
  readonly id: unknown;
  readonly row: RawRow;
  readonly attempt: number | undefined;
  readonly place: ErrorPlace;
  /** The transaction or lock this delivery holds. */
  readonly hold: H;
  readonly #form: HoldingForm<H>;
  readonly #controller = new AbortController();
  /** Transactional mode: the transaction the handler writes through, until the settlement ends it. */
  handlerTransaction: HandlerTransaction | undefined;
  #state: "held" | "settling" | "done" | "abandoned" = "held";

  constructor(form: HoldingForm<H>, row: RawRow, id: unknown, attempt: number | undefined, place: ErrorPlace, hold: H) {
    this.#form = form;
    this.row = row;
    this.id = id;
    this.attempt = attempt;
    this.place = place;
    this.hold = hold;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Given up at the end of the shutdown grace: its hold was given back then. */
  get abandoned(): boolean {
    return this.#state === "abandoned";
  }

  leaseDeadline(): undefined {
    return undefined;
  }

  async openHandlerTransaction(): Promise<AnyTransaction> {
    const open = this.#form.openHandlerTransaction;
    if (open === undefined) throw new Error("this claim form opens no handler transaction");
    this.handlerTransaction = await open.call(this.#form, this);
    return this.handlerTransaction;
  }

  /** Rolls the handler's writes back, before the hold is given back unsettled; never rejects. */
  async dropHandlerTransaction(): Promise<void> {
    const tx = this.handlerTransaction;
    this.handlerTransaction = undefined;
    if (tx === undefined || tx.isCommitted || tx.isRolledBack) return;
    await tx
      .rollback()
      .execute()
      .catch(() => undefined);
  }

  async settle(outcome: HandlerOutcome): Promise<void> {
    const form = this.#form;
    if (this.#state === "abandoned" || form.isClosed()) {
      try {
        await this.dropHandlerTransaction();
        await form.closedBeforeSettle(this);
      } finally {
        this.#state = "done";
      }
      throw closedBeforeHeldSettlement(outcome.kind, form.held, this.place);
    }
    if (this.#state !== "held") throw alreadySettled(this.place);
    this.#state = "settling";
    try {
      await holdForRetry(form, outcome, this.#controller.signal);
      if (this.#controller.signal.aborted) {
        await this.dropHandlerTransaction();
        await form.release(this).catch(() => undefined);
        throw stoppedInRetryHold(outcome.kind, form.held, this.place);
      }
      await form.settle(this, outcome);
    } finally {
      this.#state = "done";
    }
  }

  abandon(reason: unknown): void {
    if (this.#state === "settling") this.#controller.abort(reason); // ends a retryAfter hold; the settlement gives up
    if (this.#state !== "held") return;
    this.#state = "abandoned";
    this.#controller.abort(reason);
    // The grace period is over: the hold ends now, so the row returns at once.
    if (this.handlerTransaction === undefined) this.#form.abandon(this);
    else void this.dropHandlerTransaction().then(() => this.#form.abandon(this));
  }
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
