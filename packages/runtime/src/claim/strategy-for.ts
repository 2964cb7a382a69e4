import { AdvisoryClaim } from "./held/advisory-claim.js";
import type { ClaimSetup, ClaimStrategy } from "./claim-strategy.js";
import { LeaseClaim } from "./lease/lease-claim.js";
import { RowLockClaim } from "./held/row-lock-claim.js";

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
