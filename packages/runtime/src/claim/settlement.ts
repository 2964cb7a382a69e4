import { HandlerOutcome, type DeadLetterOutcome } from "../declare/outcome.js";

/**
 * What an outcome does to a held row, whatever holds it. Every form writes these three steps,
 * each inside its own hold (the claim's transaction, the key's session, the lease token):
 *
 * - `finish`: the row is done (`ack`) or given up (`drop`): deleted, or marked processed;
 * - `release`: back in the queue, at once (`delayMs: null`) or after `delayMs`, stored in a column
 *   where the table has one, else parked in this process; a snooze's release (`refund`) gives back
 *   the attempt the claim counted, in the same statement;
 * - `deadLetter`: moved to the queue's dead-letter destination.
 *
 * This module is the only place that reads an outcome's `kind`: a new kind is a compile error
 * here (the step table below is a mapped type over the outcome union) until it has a step.
 */
export type SettlementStep = FinishStep | ReleaseStep | DeadLetterStep;

interface FinishStep {
  readonly step: "finish";
  readonly how: "ack" | "drop";
  /** An ack's result as JSON text (`ctx.ack(result)`): written by the ack's own statement, never batched. */
  readonly result?: string;
}
interface ReleaseStep {
  readonly step: "release";
  readonly delayMs: number | null;
  /** A snooze: the attempt the claim counted is given back as the row is released (not a failure: never capped). */
  readonly refund: boolean;
}
interface DeadLetterStep {
  readonly step: "deadLetter";
  readonly reason: string | undefined;
}

/** A step for every kind of an outcome union: a kind without an entry does not compile. */
export type StepTable<O extends { readonly kind: string }> = { readonly [K in O["kind"]]: (outcome: Extract<O, { readonly kind: K }>) => SettlementStep };

const FINISH_ACK: FinishStep = Object.freeze({ step: "finish", how: "ack" });
const FINISH_DROP: FinishStep = Object.freeze({ step: "finish", how: "drop" });
const RELEASE_NOW: ReleaseStep = Object.freeze({ step: "release", delayMs: null, refund: false });

/** The one mapping from an outcome to its step. */
export const OUTCOME_STEPS: StepTable<HandlerOutcome> = Object.freeze({
  ack: (outcome) => (outcome.result === undefined ? FINISH_ACK : { step: "finish", how: "ack", result: outcome.result }),
  drop: () => FINISH_DROP,
  retry: () => RELEASE_NOW,
  retryAfter: (outcome) => ({ step: "release", delayMs: outcome.ms, refund: false }),
  snooze: (outcome) => ({ step: "release", delayMs: outcome.ms, refund: true }),
  deadLetter: (outcome) => ({ step: "deadLetter", reason: outcome.reason }),
});

/** The step `outcome` takes. */
export function stepOf(outcome: HandlerOutcome): SettlementStep {
  const step = OUTCOME_STEPS[outcome.kind] as ((o: HandlerOutcome) => SettlementStep) | undefined;
  // Only an outcome from outside the union (an untyped value) gets here: refused, never written as a retry.
  if (step === undefined) throw new TypeError(`no settlement step for an outcome of kind ${JSON.stringify(outcome.kind)}`);
  return step(outcome);
}

/**
 * A delivery's settlement, decided once (`decideSettlement`, by its `DeliveryRun`) and handed to the
 * form that writes it: the outcome as written, its step, and what the decision changed of the
 * outcome it was given, for the log lines that say so. Nothing on the way down computes a step again.
 */
export interface Settlement {
  /** The outcome written (what telemetry, the logs and a test's call records name). */
  readonly outcome: HandlerOutcome;
  readonly step: SettlementStep;
  /** `maxAttempts` overrode this outcome, which would have released the row once more: the row goes to the dead letter. */
  readonly capped?: HandlerOutcome;
  /** A dead letter on a queue with no destination: the row is kept instead, hidden for the rules' `keepMs`. */
  readonly noDestination?: true;
  /** A delay the table stores in no column: the row is released now and parked in this process for the delay. */
  readonly parked?: true;
}

/** What a subscription's settlements are decided by, besides each delivery's outcome and attempt. */
export interface SettlementRules {
  /** The queue's `maxAttempts` (declared with its dead letter). */
  readonly maxAttempts: number | undefined;
  /** A dead-letter destination is declared. */
  readonly deadLetter: boolean;
  /** How long a row whose dead letter has no destination is kept out of claims. */
  readonly keepMs: number;
  /** The table stores a delay (a retryAfter column, or the lease column). */
  readonly storesDelay: boolean;
}

/** Every ack settles alike, whatever the rules: one value, not one per delivery (a handler that returns nothing settles as this). */
export const ACKED: Settlement = Object.freeze({ outcome: HandlerOutcome.ack(), step: FINISH_ACK });

/**
 * The settlement of `outcome` for a delivery at `attempt`, its step computed here, once:
 *
 * - `maxAttempts` is a cap: a delivery whose attempt reached it is never released for another
 *   attempt (a snooze gives its attempt back, so it is not capped). An outcome that would release the row (`retry`, `retryAfter`), whoever chose it (the
 *   handler or a policy), becomes a move to the dead letter with `reason` (built only then); every
 *   other outcome stands, so a policy can still dead-letter earlier. No cap without an attempt.
 * - A dead letter needs a destination: without one the row is kept, released for `keepMs`.
 * - A delay the table cannot store is served by parking the row in this process (`parked`).
 */
export function decideSettlement(outcome: HandlerOutcome, attempt: number | undefined, rules: SettlementRules, reason: () => string): Settlement {
  let step = stepOf(outcome);
  if (step === FINISH_ACK) return ACKED;
  let settlement: Settlement = { outcome, step };
  const { maxAttempts } = rules;
  // A snooze spends no attempt, so the cap does not apply to it.
  if (step.step === "release" && !step.refund && maxAttempts !== undefined && attempt !== undefined && attempt >= maxAttempts) {
    const moved: DeadLetterOutcome = Object.freeze({ kind: "deadLetter", reason: reason() });
    step = { step: "deadLetter", reason: moved.reason };
    settlement = { outcome: moved, step, capped: outcome };
  }
  if (step.step === "deadLetter" && !rules.deadLetter) {
    step = { step: "release", delayMs: rules.keepMs, refund: false };
    settlement = { ...settlement, outcome: Object.freeze({ kind: "retryAfter", ms: rules.keepMs }), step, noDestination: true };
  }
  if (step.step === "release" && step.delayMs !== null && !rules.storesDelay) settlement = { ...settlement, parked: true };
  return Object.freeze(settlement);
}

/**
 * How one form writes each step for one delivery (`D`, with what the form passes along, `X`).
 * A form implements all three, once (not per delivery), and `writeStep` picks one.
 */
export interface StepWriter<D, X, R> {
  finish(how: "ack" | "drop", delivery: D, extra: X, result: string | undefined): R;
  /** `refund`: a snooze, whose statement also gives back the attempt the claim counted. */
  release(delayMs: number | null, refund: boolean, delivery: D, extra: X): R;
  deadLetter(reason: string | undefined, delivery: D, extra: X): R;
}

/** Writes `settlement`'s step through `writer`: the one dispatch every form's settlement goes through. */
export function writeStep<D, X, R>(settlement: Settlement, writer: StepWriter<D, X, R>, delivery: D, extra: X): R {
  const { step } = settlement;
  switch (step.step) {
    case "finish":
      return writer.finish(step.how, delivery, extra, step.result);
    case "release":
      return writer.release(step.delayMs, step.refund, delivery, extra);
    case "deadLetter":
      return writer.deadLetter(step.reason, delivery, extra);
    default:
      return unknownStep(step);
  }
}

function unknownStep(step: never): never {
  throw new Error(`no settlement for step ${JSON.stringify(step)}`);
}

/** `ack` or `drop` when the settlement finishes the row (the shared row-lock form batches these), else `undefined`. */
export function finishOf(settlement: Settlement): "ack" | "drop" | undefined {
  const { step } = settlement;
  return step.step === "finish" ? step.how : undefined;
}

/**
 * `ack` or `drop` when the settlement finishes the row with nothing of its own to write, so it may
 * join a statement that finishes many rows; an ack carrying a result is written by its own statement.
 */
export function batchedFinishOf(settlement: Settlement): "ack" | "drop" | undefined {
  const { step } = settlement;
  return step.step === "finish" && step.result === undefined ? step.how : undefined;
}

/** A transactional handler's writes commit with the settlement only on an ack; any other settlement rolls them back. */
export function commitsHandlerWrites(settlement: Settlement): boolean {
  return finishOf(settlement) === "ack";
}

/** The delay a settlement releases its row for, in ms, when it releases it for later. */
export function delayOf(settlement: Settlement): number | undefined {
  const { step } = settlement;
  return step.step === "release" && step.delayMs !== null ? step.delayMs : undefined;
}

/** The delay of a snooze (a release that gives its attempt back), in ms; `undefined` for any other settlement. */
export function snoozedFor(settlement: Settlement): number | undefined {
  const { step } = settlement;
  return step.step === "release" && step.refund ? (step.delayMs ?? 0) : undefined;
}

/**
 * How a settlement ends its row, when it does: done (an ack, with its result as JSON text), or given up
 * (a drop, a dead letter, with why); `undefined` for a release (the row runs again).
 */
export function rowEndOf(settlement: Settlement): { readonly done: true; readonly result: string | undefined } | { readonly done: false; readonly reason: string } | undefined {
  const { step } = settlement;
  if (step.step === "release") return undefined;
  if (step.step === "deadLetter") return { done: false, reason: step.reason ?? "dead-lettered" };
  return step.how === "ack" ? { done: true, result: step.result } : { done: false, reason: "dropped" };
}

/** The settlement drops the row: finished without success, logged as a warning. */
export function dropsRow(settlement: Settlement): boolean {
  return finishOf(settlement) === "drop";
}

/** An outcome as a log line names it: `retry()`, `retryAfter(250)`. */
export function outcomeLabel(outcome: HandlerOutcome): string {
  const step = stepOf(outcome);
  return step.step === "release" && step.delayMs !== null ? `${outcome.kind}(${step.delayMs})` : `${outcome.kind}()`;
}

/** What a failure's log line says became of the row. */
export function failureFate(settlement: Settlement): string {
  return settlement.step.step === "deadLetter" ? "the row goes to the dead letter" : "the row is released for another attempt";
}

/** The log line of an undecodable payload, by what the onDecodeError policy made of it. */
export function undecodableMessage(settlement: Settlement): string {
  const { step } = settlement;
  switch (step.step) {
    case "deadLetter":
      return "payload cannot be decoded: row moved to the dead letter";
    case "finish":
      return `payload cannot be decoded: row finished (${step.how}) by the onDecodeError policy`;
    case "release":
      return "payload cannot be decoded: row kept, not delivered; fix the row or the code";
    default:
      return unknownStep(step);
  }
}

/** What a written settlement was, as a job's lifecycle names it: done, back for later, moved to the dead letter, or given up. */
export function settledAs(settlement: Settlement): "succeeded" | "retried" | "snoozed" | "deadLettered" | "dropped" {
  const { step } = settlement;
  if (step.step === "release") return step.refund ? "snoozed" : "retried";
  if (step.step === "deadLetter") return "deadLettered";
  return step.how === "ack" ? "succeeded" : "dropped";
}

/** A settlement that put its row back (`settledAs` says `retried`): at once by `retry`, or `retryAfter` (any other outcome turned into a delay). */
export function retriedAs(settlement: Settlement): "retry" | "retryAfter" {
  return settlement.outcome.kind === "retry" ? "retry" : "retryAfter";
}
