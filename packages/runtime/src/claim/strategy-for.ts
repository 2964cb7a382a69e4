import type { InboxDescription } from "@sqlinbox/core/internal";
import { AdvisoryClaim } from "./advisory-claim.js";
import type { ClaimSetup, ClaimStrategy } from "./claim-strategy.js";
import { LeaseClaim } from "./lease-claim.js";
import { RowLockClaim } from "./row-lock-claim.js";

/**
 * Whether a form keeps state on a database session from one transaction to the next: the advisory
 * form holds its key's lock on the session for the whole delivery. A pooler in transaction mode hands
 * each transaction to any server session, so such a form cannot run through one.
 */
export function holdsSessionAcrossTransactions(spec: Pick<InboxDescription, "form">): boolean {
  return spec.form === "advisory";
}

/**
 * Whether a form's exclusivity rests on a lock the server holds until the delivery ends (a row lock,
 * an advisory lock) rather than on a committed write (a lease). On a multi-primary cluster such a lock
 * is the node's own: a worker on another node can take the same row.
 */
export function exclusiveByLock(spec: Pick<InboxDescription, "form">): boolean {
  return spec.form !== "lease";
}

/** The claim strategy of a table's form: a lease column, an advisory key, or neither (row lock). */
export function claimStrategyFor(setup: ClaimSetup): ClaimStrategy {
  switch (setup.spec.form) {
    case "lease":
      return new LeaseClaim(setup);
    case "advisory":
      return new AdvisoryClaim(setup);
    case "rowLock":
      return new RowLockClaim(setup);
  }
}
