import type { ErrorPlace, InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import type { DeadLetterStatements } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, ControlledTransaction } from "kysely";
import type { AnyTransaction } from "../../drivers/database.js";
import { alreadySettled, closedBeforeHeldSettlement, noDeadLetter, progressNotShown, type HeldThing } from "../../errors.js";
import type { Clock } from "../../clock.js";
import type { ParkedRows } from "../parked-rows.js";
import type { DeadLetterTarget } from "../../declare/queue.js";
import type { ClaimedDelivery, SettleDone } from "../claim-strategy.js";
import { delayOf, type Settlement, type StepWriter, writeStep } from "../settlement.js";

/**
 * What differs between the forms that hold a row for a delivery's whole run: how the hold is
 * given back and how the settlement is written. Row lock holds the claim's transaction, advisory
 * the key's lock on a session of its own. One per claim strategy; `H` is what one delivery holds.
 */
export interface HoldingForm<H> {
  readonly held: HeldThing;
  readonly clock: Clock;
  /** Rows kept out of this process's claims: where a delay goes on a table with no retryAfter column. */
  readonly parked?: ParkedRows | undefined;
  isClosed(): boolean;
  /** The settlement came after the broker closed or the delivery was abandoned: what is left to give back. */
  closedBeforeSettle(delivery: HeldDelivery<H>): Promise<void>;
  /** Gives the hold back at once, not waiting (the shutdown grace is over; `started: false`: never started); never rejects. */
  abandon(delivery: HeldDelivery<H>, started: boolean): void;
  /** Claimed ahead and about to start: true when the hold is known gone (an advisory batch's session ended); the delivery is then given up. */
  lapsed?(delivery: HeldDelivery<H>): boolean;
  /** Writes the settlement on the hold and ends it (committing the handler's writes on an ack); throws when the hold was lost. */
  settle(delivery: HeldDelivery<H>, settlement: Settlement): Promise<void>;
  /** The settlement of `delivery` committed (`settle` resolved): what waits for that commit is told. */
  committed?(delivery: HeldDelivery<H>): void;
  /** Writes a progress value (JSON text) while the row is held, visible to other sessions at once; absent where the form cannot show it (row lock). */
  writeProgress?(delivery: HeldDelivery<H>, progress: string): Promise<void>;
  /** Transactional mode: opens the handler's transaction on the hold (a savepoint, or a transaction on the lock's session). */
  openHandlerTransaction?(delivery: HeldDelivery<H>): Promise<HandlerTransaction>;
}

// biome-ignore lint/suspicious/noExplicitAny: the handler's transaction runs on any database interface, with any savepoints
export type HandlerTransaction = ControlledTransaction<any, any>;

/**
 * The delivery of a held row: `held` until `settle` (→ `settling` → `done`) or `abandon`
 * (→ `abandoned`); one settlement at most. A settlement ends the hold at once: a delay is stored
 * in the retryAfter column, or, without one, the row is released and parked in this process.
 */
export class HeldDelivery<H> implements ClaimedDelivery {
  readonly id: unknown;
  readonly row: RawRow;
  readonly attempt: number | undefined;
  readonly place: ErrorPlace;
  /** The transaction or lock this delivery holds. */
  readonly hold: H;
  readonly #form: HoldingForm<H>;
  /** Made when the signal is first read or aborted: most deliveries never need one, and one costs enough to matter per row. */
  #controller: AbortController | undefined;
  /** Transactional mode: the transaction the handler writes through, until the settlement ends it. */
  handlerTransaction: HandlerTransaction | undefined;
  slot = -1;
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
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  abortedWith(): { readonly reason: unknown } | undefined {
    const signal = this.#controller?.signal;
    return signal?.aborted === true ? { reason: signal.reason as unknown } : undefined;
  }

  /** Given up at the end of the shutdown grace: its hold was given back then. */
  get abandoned(): boolean {
    return this.#state === "abandoned";
  }

  leaseDeadline(): undefined {
    return undefined;
  }

  /** About to start: when the form knows the hold is gone, the delivery is given up (never started) and not run. */
  lapsedBeforeStart(): boolean {
    if (this.#form.lapsed?.(this) !== true) return false;
    this.abandon(new Error("the hold ended before the delivery started"), false);
    return true;
  }

  async openHandlerTransaction(): Promise<AnyTransaction> {
    const open = this.#form.openHandlerTransaction;
    if (open === undefined) throw new Error("this claim form opens no handler transaction");
    this.handlerTransaction = await open.call(this.#form, this);
    return this.handlerTransaction;
  }

  /** `ctx.progress`: written while the row is held, by the form (refused where the form cannot show progress to other sessions). */
  writeProgress(progress: string): Promise<void> {
    const write = this.#form.writeProgress;
    if (write === undefined) return Promise.reject(progressNotShown(this.place));
    if (this.#state !== "held") return Promise.reject(alreadySettled(this.place));
    return write.call(this.#form, this, progress);
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

  settle(settlement: Settlement, done: SettleDone): void {
    this.#settle(settlement).then(
      () => done.settled(true),
      (error: unknown) => done.settled(false, error),
    );
  }

  async #settle(settlement: Settlement): Promise<void> {
    const form = this.#form;
    if (this.#state === "abandoned" || form.isClosed()) {
      try {
        await this.dropHandlerTransaction();
        await form.closedBeforeSettle(this);
      } finally {
        this.#state = "done";
      }
      throw closedBeforeHeldSettlement(settlement.outcome.kind, form.held, this.place);
    }
    if (this.#state !== "held") throw alreadySettled(this.place);
    this.#state = "settling";
    try {
      // No column to hide the row in: it is released now and this process leaves it out of its
      // claims meanwhile — parked before the release, so no claim can take it in between.
      if (settlement.parked === true) form.parked?.park(this.id, delayOf(settlement) ?? 0);
      await form.settle(this, settlement);
      form.committed?.(this);
    } finally {
      this.#state = "done";
    }
  }

  interrupt(reason: unknown): void {
    if (this.#state !== "held") return;
    this.#controller ??= new AbortController();
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  abandon(reason: unknown, started = true): void {
    if (this.#state !== "held") return;
    this.#state = "abandoned";
    this.#controller ??= new AbortController();
    this.#controller.abort(reason);
    // The grace period is over: the hold ends now, so the row returns at once.
    if (this.handlerTransaction === undefined) this.#form.abandon(this, started);
    else void this.dropHandlerTransaction().then(() => this.#form.abandon(this, started));
  }
}

/** Deliveries claimed but never started (the app stopped first) give their hold back at once. */
export async function abandonUnstarted(deliveries: readonly ClaimedDelivery[]): Promise<void> {
  for (const delivery of deliveries) delivery.abandon(new Error("the app stopped before the delivery started"), false);
}

/** The settlement statements both held forms share the shape of. */
interface HeldSettlements {
  settleAck(spec: InboxDescription, id: unknown, now: Date): CompiledQuery;
  settleAckWithResult(spec: InboxDescription, id: unknown, now: Date, result: string): CompiledQuery;
  settleRetry(spec: InboxDescription, id: unknown, retryAt: Date): CompiledQuery;
  settleSnooze(spec: InboxDescription, id: unknown, retryAt: Date | null): CompiledQuery;
}

/** What a held settlement writes besides the outcome: the dead-letter destination and the attempt it records. */
export interface HeldSettlementContext {
  readonly deadLetters: DeadLetterStatements;
  readonly target: DeadLetterTarget | undefined;
  readonly attempt: number | undefined;
  readonly place: ErrorPlace;
}

/**
 * The statements that write `settlement` for a held row, in order, in the hold's transaction (none:
 * nothing to write but the release). A delay goes into the retryAfter column; without one the
 * row is released at once (the caller parks it). A dead letter is the move: an insert into the
 * destination and the delete, or the group update.
 */
export function heldSettlement(
  statements: HeldSettlements,
  spec: InboxDescription,
  id: unknown,
  settlement: Settlement,
  now: Date,
  context: HeldSettlementContext,
): CompiledQuery[] {
  return writeStep(settlement, HELD_STEPS, id, { statements, spec, now, context });
}

/** What the held steps write with: the form's statements, the row's table, the time, the dead-letter context. */
interface HeldStepInput {
  readonly statements: HeldSettlements;
  readonly spec: InboxDescription;
  readonly now: Date;
  readonly context: HeldSettlementContext;
}

/** Each step of a held row as statements in the hold's transaction. */
const HELD_STEPS: StepWriter<unknown, HeldStepInput, CompiledQuery[]> = {
  finish: (_how, id, { statements, spec, now }, result) => [result === undefined ? statements.settleAck(spec, id, now) : statements.settleAckWithResult(spec, id, now, result)],
  // A retry at once writes nothing: the hold's end gives the row back.
  // A snooze also gives back the attempt the claim counted, in the same statement (it commits with the hold's end).
  release: (delayMs, refund, id, { statements, spec, now }) => {
    const retryAt = delayMs !== null && spec.retryAfter !== undefined ? new Date(now.getTime() + delayMs) : null;
    if (refund && (retryAt !== null || spec.attempt !== undefined)) return [statements.settleSnooze(spec, id, retryAt)];
    return retryAt !== null ? [statements.settleRetry(spec, id, retryAt)] : [];
  },
  deadLetter: (reason, id, { spec, now, context }) => {
    const { deadLetters, target, attempt, place } = context;
    if (target === undefined) throw noDeadLetter(place);
    const record = { lastError: reason ?? null, attempts: attempt ?? null, at: now };
    if ("group" in target) return [deadLetters.toGroup(spec, id, target.group, record)];
    return [deadLetters.toTable(spec, target.table, id, record), deadLetters.removeMoved(spec, id)];
  },
};
