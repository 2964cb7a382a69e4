import type { DeadLetterOutcome, HandlerOutcome } from "../declare/outcome.js";

/**
 * What an outcome does to a held row, whatever holds it. Every form writes these three steps,
 * each inside its own hold (the claim's transaction, the key's session, the lease token):
 *
 * - `finish`: the row is done (`ack`) or given up (`drop`): deleted, or marked processed;
 * - `release`: back in the queue, at once (`delayMs: null`) or after `delayMs`, stored in a column
 *   where the table has one, else parked in this process;
 * - `deadLetter`: moved to the queue's dead-letter destination.
 *
 * This module is the only place that reads an outcome's `kind`: a new kind is a compile error
 * here (the step table below is a mapped type over the outcome union) until it has a step.
 */
export type SettlementStep = FinishStep | ReleaseStep | DeadLetterStep;

export interface FinishStep {
  readonly step: "finish";
  readonly how: "ack" | "drop";
}
export interface ReleaseStep {
  readonly step: "release";
  readonly delayMs: number | null;
}
export interface DeadLetterStep {
  readonly step: "deadLetter";
  readonly reason: string | undefined;
}

/** A step for every kind of an outcome union: a kind without an entry does not compile. */
export type StepTable<O extends { readonly kind: string }> = { readonly [K in O["kind"]]: (outcome: Extract<O, { readonly kind: K }>) => SettlementStep };

const FINISH_ACK: FinishStep = Object.freeze({ step: "finish", how: "ack" });
const FINISH_DROP: FinishStep = Object.freeze({ step: "finish", how: "drop" });
const RELEASE_NOW: ReleaseStep = Object.freeze({ step: "release", delayMs: null });

/** The one mapping from an outcome to its step. */
export const OUTCOME_STEPS: StepTable<HandlerOutcome> = Object.freeze({
  ack: () => FINISH_ACK,
  drop: () => FINISH_DROP,
  retry: () => RELEASE_NOW,
  retryAfter: (outcome) => ({ step: "release", delayMs: outcome.ms }),
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
 * How one form writes each step for one delivery (`D`, with what the form passes along, `X`).
 * A form implements all three, once (not per delivery), and `writeStep` picks one.
 */
export interface StepWriter<D, X, R> {
  finish(how: "ack" | "drop", delivery: D, extra: X): R;
  release(delayMs: number | null, delivery: D, extra: X): R;
  deadLetter(reason: string | undefined, delivery: D, extra: X): R;
}

/** Writes `outcome`'s step through `writer`: the one dispatch every form's settlement goes through. */
export function writeStep<D, X, R>(outcome: HandlerOutcome, writer: StepWriter<D, X, R>, delivery: D, extra: X): R {
  const step = stepOf(outcome);
  switch (step.step) {
    case "finish":
      return writer.finish(step.how, delivery, extra);
    case "release":
      return writer.release(step.delayMs, delivery, extra);
    case "deadLetter":
      return writer.deadLetter(step.reason, delivery, extra);
    default:
      return unknownStep(step);
  }
}

function unknownStep(step: never): never {
  throw new Error(`no settlement for step ${JSON.stringify(step)}`);
}

/** `ack` or `drop` when the outcome finishes the row (the lease and shared row-lock forms batch these), else `undefined`. */
export function finishOf(outcome: HandlerOutcome): "ack" | "drop" | undefined {
  const step = stepOf(outcome);
  return step.step === "finish" ? step.how : undefined;
}

/** A transactional handler's writes commit with the settlement only on an ack; any other outcome rolls them back. */
export function commitsHandlerWrites(outcome: HandlerOutcome): boolean {
  return finishOf(outcome) === "ack";
}

/** The delay an outcome asks for, in ms, when it releases the row for later. */
export function delayOf(outcome: HandlerOutcome): number | undefined {
  const step = stepOf(outcome);
  return step.step === "release" && step.delayMs !== null ? step.delayMs : undefined;
}

/** The outcome moves the row to the dead letter. */
export function movesToDeadLetter(outcome: HandlerOutcome): boolean {
  return stepOf(outcome).step === "deadLetter";
}

/** The outcome drops the row: finished without success, logged as a warning. */
export function dropsRow(outcome: HandlerOutcome): boolean {
  return finishOf(outcome) === "drop";
}

/** What `capOf` decided: the outcome that is written, and the released one it overrode (when it did). */
export interface CapDecision {
  readonly outcome: HandlerOutcome;
  readonly overrode: HandlerOutcome | undefined;
}

/**
 * `maxAttempts` is a cap: a delivery whose attempt reached it is never released for another
 * attempt. An outcome that would release the row (`retry`, `retryAfter`), whoever chose it (the
 * handler or a policy), becomes a move to the dead letter with `reason`; every other outcome stands,
 * so a policy can still dead-letter earlier. No cap without an attempt or without `maxAttempts`.
 * `reason` (the dead letter's last error) is built only when the cap applies.
 */
export function capOf(outcome: HandlerOutcome, attempt: number | undefined, maxAttempts: number | undefined, reason: () => string): CapDecision {
  if (attempt === undefined || maxAttempts === undefined || attempt < maxAttempts || stepOf(outcome).step !== "release") return { outcome, overrode: undefined };
  const moved: DeadLetterOutcome = Object.freeze({ kind: "deadLetter", reason: reason() });
  return { outcome: moved, overrode: outcome };
}

/** An outcome as a log line names it: `retry()`, `retryAfter(250)`. */
export function outcomeLabel(outcome: HandlerOutcome): string {
  const delay = delayOf(outcome);
  return delay === undefined ? `${outcome.kind}()` : `${outcome.kind}(${delay})`;
}

/** What a failure's log line says became of the row. */
export function failureFate(outcome: HandlerOutcome): string {
  return movesToDeadLetter(outcome) ? "the row goes to the dead letter" : "the row is released for another attempt";
}

/** The log line of an undecodable payload, by what the onDecodeError policy made of it. */
export function undecodableMessage(outcome: HandlerOutcome): string {
  const step = stepOf(outcome);
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
