import type { ClaimedDelivery } from "../claim/claim-strategy.js";
import { decideSettlement, delayOf, outcomeLabel, snoozedFor, type Settlement, type SettlementRules } from "../claim/settlement.js";
import { defaultOnDecodeError, defaultOnError, reasonOf, type FailureContext, type FailurePolicy } from "../declare/failure-policy.js";
import { type HandlerOutcome, toOutcome } from "../declare/outcome.js";
import { delayWithoutColumn, noDeadLetter } from "../errors.js";
import { errorFields } from "../logger.js";
import type { SubscriptionSetup } from "./setup.js";

/** What a failure is: a handler's throw (its onError policy), or a payload that cannot be decoded (its onDecodeError policy). */
export type Failure = "handler" | "decode";

/**
 * How one subscription's settlements are decided: the failure policies make an outcome of a failure,
 * and `decideSettlement` (the pure rules: the `maxAttempts` cap, the missing dead-letter destination,
 * a delay the table cannot store) makes the settlement of an outcome, once per delivery. This class
 * adds the log lines that say what a decision changed.
 */
export class SettlementPolicy {
  readonly #s: SubscriptionSetup;
  readonly #place: { readonly subscription: string; readonly table: string };
  readonly #rules: SettlementRules;
  readonly #onError: FailurePolicy;
  readonly #onDecodeError: FailurePolicy;

  constructor(setup: SubscriptionSetup, place: { readonly subscription: string; readonly table: string }) {
    this.#s = setup;
    this.#place = place;
    const { deadLetter } = setup.options;
    const storesDelay = setup.strategy.profile.storesDelay;
    this.#rules = Object.freeze({ maxAttempts: deadLetter?.maxAttempts, deadLetter: deadLetter !== undefined, keepMs: setup.decodeRetryMs, storesDelay });
    this.#onError = setup.options.onError ?? defaultOnError();
    this.#onDecodeError = setup.options.onDecodeError ?? defaultOnDecodeError;
  }

  /** The settlement of what the app's own code (`source`: the handler, a batch handler) returned for `delivery`. */
  returned(delivery: ClaimedDelivery, outcome: HandlerOutcome, source: string): Settlement {
    return this.#decide(outcome, source, delivery, undefined, true);
  }

  /** The settlement of an outcome the runtime chose itself (a cancelled delivery's drop); no attempt: the cap does not apply. */
  runtime(outcome: HandlerOutcome, attempt: number | undefined): Settlement {
    return decideSettlement(outcome, attempt, this.#rules, noReason);
  }

  /**
   * What a failure becomes under its policy. A policy that throws, or returns no outcome, falls back
   * to the default; a dead letter on a queue without one keeps the row (never loses it).
   */
  failed(what: Failure, delivery: ClaimedDelivery, error: unknown): Settlement {
    const { options, logger } = this.#s;
    const policy = what === "handler" ? this.#onError : this.#onDecodeError;
    const { deadLetter, maxAttempts, keepMs } = this.#rules;
    const ctx: FailureContext = { ...this.#place, id: delivery.id, deadLetter, maxAttempts, keepMs };
    // The defaults may park a row on a table with no column for a time; a policy of the app's own may not (it does not compile).
    const own = policy === options.onError || policy === options.onDecodeError;
    const source = what === "handler" ? "the onError policy" : "the onDecodeError policy";
    let outcome: HandlerOutcome;
    try {
      outcome = toOutcome(policy(error, delivery.attempt, ctx));
    } catch (policyError) {
      logger.error({ ...errorFields(policyError), ...this.#place, id: delivery.id }, `the ${what === "handler" ? "onError" : "onDecodeError"} policy failed; the default decides`);
      return this.#decide((what === "handler" ? defaultOnError() : defaultOnDecodeError)(error, delivery.attempt, ctx), source, delivery, error, false);
    }
    return this.#decide(outcome, source, delivery, error, own);
  }

  /** What a failure's log line carries: the error, where, which attempt, and what became of the row. */
  failureFields(delivery: ClaimedDelivery, error: unknown, settlement: Settlement) {
    const retryInMs = delayOf(settlement);
    const retry = retryInMs === undefined ? {} : { retryInMs };
    return { ...errorFields(error), ...this.#place, id: delivery.id, attempt: delivery.attempt, outcome: settlement.outcome.kind, ...retry };
  }

  /**
   * The settlement of `outcome` (`decideSettlement`), with a log line for what the decision changed:
   * a warning naming the outcome `maxAttempts` overrode; an error for a dead letter with no
   * destination; and, where the app's own code (`own`) asked for a delay the table cannot store
   * (a `retryAfter` that arrived untyped), a `Declaration` error naming the column to add.
   */
  #decide(outcome: HandlerOutcome, source: string, delivery: ClaimedDelivery, error: unknown, own: boolean): Settlement {
    const { logger } = this.#s;
    const { maxAttempts } = this.#rules;
    const { attempt } = delivery;
    const settlement = decideSettlement(outcome, attempt, this.#rules, () => (error === undefined ? `attempt ${attempt} reached maxAttempts ${maxAttempts}` : reasonOf(error)));
    const snoozeMs = snoozedFor(settlement);
    if (snoozeMs !== undefined) logger.debug({ ...this.#place, id: delivery.id, attempt, snoozeMs }, "snoozed: the row comes back later with its attempt not spent");
    if (settlement.capped === undefined && settlement.noDestination === undefined && settlement.parked === undefined) return settlement;
    const place = { ...this.#place, id: delivery.id };
    if (settlement.capped !== undefined) {
      const overridden = outcomeLabel(settlement.capped);
      logger.warn(
        { ...place, attempt, maxAttempts, overridden },
        `attempt ${attempt} reached maxAttempts ${maxAttempts}: the row goes to the dead letter, not ${overridden} as ${source} returned`,
      );
    }
    if (settlement.noDestination === true) logger.error({ ...errorFields(noDeadLetter(place)), ...place }, "no dead-letter destination: row kept");
    if (settlement.parked === true && own) {
      logger.error(
        { ...errorFields(delayWithoutColumn(delayOf(settlement) ?? 0, this.#s.strategy.profile.describedAs, source, place)), ...place },
        "retryAfter on a table with no retryAfter column: row released and parked in this process",
      );
    }
    return settlement;
  }
}

/** The dead letter's reason where the cap never applies (a drop; a release with no attempt). */
const noReason = (): string => "";
