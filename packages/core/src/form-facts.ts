import type { ClaimForm } from "./roles.js";

/**
 * What a claim form is, known from a table's description alone: before anything connects, and
 * before any claim is built. The declaration checks (`InboxQueue`'s options), the start-up refusals
 * (an engine, a pooler, a cluster) and the claims all read the same entry, and so do the compile-time
 * rules' run-time counterparts. One entry per form.
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
}

/** The facts of each claim form. */
export const FORM_FACTS: { readonly [F in ClaimForm]: FormFacts } = Object.freeze({
  rowLock: Object.freeze({
    needsRowLocks: true,
    sharesTransactions: true,
    storesDelayInHold: false,
    sessionAcrossTransactions: false,
    exclusiveByLock: true,
    ordersKeys: true,
    describedAs: "a row-lock table",
  }),
  lease: Object.freeze({
    needsRowLocks: false,
    sharesTransactions: false,
    storesDelayInHold: true,
    sessionAcrossTransactions: false,
    exclusiveByLock: false,
    ordersKeys: true,
    describedAs: "a lease table",
  }),
  advisory: Object.freeze({
    needsRowLocks: false,
    sharesTransactions: false,
    storesDelayInHold: false,
    sessionAcrossTransactions: true,
    exclusiveByLock: true,
    ordersKeys: false,
    describedAs: "an advisory table",
  }),
});
