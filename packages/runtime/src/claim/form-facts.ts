import type { ClaimForm } from "@sqlinbox/core/internal";
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
 * What is known of a claim form before any strategy is built: at declaration (a queue's options)
 * and before connecting (the engine's capabilities). One entry per form: with the strategy
 * class, its case in `claimStrategyFor` and the core rules, all a form needs.
 */
export interface FormFacts {
  /** The engine needs row locks (`FOR UPDATE SKIP LOCKED`) for this form. */
  readonly needsRowLocks: boolean;
  /** The rows of one claim may share its transaction (`.sharedTransaction()`, a batch handler's claim). */
  readonly sharesTransactions: boolean;
  /** A delay can be stored in the form's own hold column (the lease's deadline), with no retryAfter column. */
  readonly storesDelayInHold: boolean;
  /**
   * The form keeps state on a database session from one transaction to the next (the advisory form holds its
   * key's lock on the session for the whole delivery): a pooler in transaction mode, which hands each
   * transaction to any server session, breaks it.
   */
  readonly sessionAcrossTransactions: boolean;
  /**
   * The form's exclusivity rests on a lock the server holds until the delivery ends (a row lock, an advisory
   * lock), not on a committed write (a lease): on a multi-primary cluster such a lock is the node's own, and a
   * worker on another node can take the same row.
   */
  readonly exclusiveByLock: boolean;
  /**
   * The claim can keep the rows of one key in id order, n at a time (`maxInWorkPerKey`): the head rule is part of
   * its select. Not the advisory form, whose key lock already runs one row of a key at a time.
   */
  readonly ordersKeys: boolean;
  /** The table, as errors name it. */
  readonly describedAs: string;
  readonly stop: StopFate;
  /**
   * How `maxInWork(n)` holds its cap: the live leases counted in the table (`leases`; a crashed
   * process's rows count until their lease expires), or slots the delivery's hold keeps (`slots`:
   * slot rows locked in a row-lock transaction, slot locks on an advisory session; back at once
   * when the session ends).
   */
  readonly capCounts: "leases" | "slots";
}

export const FORM_FACTS: { readonly [F in ClaimForm]: FormFacts } = Object.freeze({
  rowLock: Object.freeze({
    needsRowLocks: true,
    sharesTransactions: true,
    storesDelayInHold: false,
    sessionAcrossTransactions: false,
    exclusiveByLock: true,
    ordersKeys: true,
    describedAs: "a row-lock table",
    stop: Object.freeze({ abandoned: "rolledBack", releasesLock: false, fate: "its transaction rolls back: the row returns at once, its attempt not spent" }),
    capCounts: "slots",
  }),
  lease: Object.freeze({
    needsRowLocks: false,
    sharesTransactions: false,
    storesDelayInHold: true,
    sessionAcrossTransactions: false,
    exclusiveByLock: false,
    ordersKeys: true,
    describedAs: "a lease table",
    stop: Object.freeze({ abandoned: "givenBack", releasesLock: false, fate: "its row returns when its lease expires" }),
    capCounts: "leases",
  }),
  advisory: Object.freeze({
    needsRowLocks: false,
    sharesTransactions: false,
    storesDelayInHold: false,
    sessionAcrossTransactions: true,
    exclusiveByLock: true,
    ordersKeys: false,
    describedAs: "an advisory table",
    stop: Object.freeze({ abandoned: "givenBack", releasesLock: true, fate: "its key's lock is released: the row returns at once, its attempt spent" }),
    capCounts: "slots",
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
