import { FORM_FACTS as DESCRIBED, type ClaimForm, type FormFacts as DescribedFacts } from "@sqlinbox/core/internal";
import type { EngineCapabilities } from "@sqlinbox/kysely-dialects";

/** What a stop does to a delivery of the form still in work when the grace ends. */
export interface StopFate {
  /** Rolled back (the row back at once, no attempt spent), or given back (its hold let go). */
  readonly abandoned: "rolledBack" | "givenBack";
  /** The row's key lock is released. */
  readonly releasesLock: boolean;
  /** What becomes of the row, for the log line. */
  readonly fate: string;
}

/**
 * What is known of a claim form before any strategy is built: the description's facts (core's
 * `FORM_FACTS`: what the declaration checks and the start-up refusals read), and how the runtime
 * holds it — what a stop does, how the cap counts. One entry per form: with the strategy class,
 * its case in `claimStrategyFor` and the core rules, all a form needs.
 */
export interface FormFacts extends DescribedFacts {
  readonly stop: StopFate;
  /**
   * How `maxInWork(n)` holds its cap (`claim/cap/`): the live leases counted in the table (`leases`; a
   * crashed process's rows count until their lease expires), or a slot the delivery's hold keeps:
   * a slot row locked in the row-lock transaction (`slot rows`, inserted at startup), a slot lock on
   * the advisory session (`slot locks`); back at once when the session ends.
   */
  readonly capCounts: "leases" | "slot rows" | "slot locks";
}

export const FORM_FACTS: { readonly [F in ClaimForm]: FormFacts } = Object.freeze({
  rowLock: Object.freeze({
    ...DESCRIBED.rowLock,
    stop: Object.freeze({ abandoned: "rolledBack", releasesLock: false, fate: "its transaction rolls back: the row returns at once, its attempt not spent" }),
    capCounts: "slot rows",
  }),
  lease: Object.freeze({
    ...DESCRIBED.lease,
    stop: Object.freeze({ abandoned: "givenBack", releasesLock: false, fate: "its row returns when its lease expires" }),
    capCounts: "leases",
  }),
  advisory: Object.freeze({
    ...DESCRIBED.advisory,
    stop: Object.freeze({ abandoned: "givenBack", releasesLock: true, fate: "its key's lock is released: the row returns at once, its attempt spent" }),
    capCounts: "slot locks",
  }),
});

/** The form cannot run on an engine with these capabilities (a row-lock table on SQLite). */
export function formUnsupported(form: ClaimForm, capabilities: Pick<EngineCapabilities, "rowLock">): boolean {
  return FORM_FACTS[form].needsRowLocks && !capabilities.rowLock;
}

/** The form cannot run through a pooler in transaction mode: it keeps a session across transactions. */
export function holdsSessionAcrossTransactions(form: ClaimForm): boolean {
  return FORM_FACTS[form].sessionAcrossTransactions;
}

/** The form is unsafe on a multi-primary cluster: its exclusivity is a lock the node holds alone. */
export function exclusiveByLock(form: ClaimForm): boolean {
  return FORM_FACTS[form].exclusiveByLock;
}
