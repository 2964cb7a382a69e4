import type { QueueOptions } from "../../declare/queue.js";
import { CappedClaim } from "../cap/capped-claim.js";
import { LeaseCount } from "../cap/lease-count.js";
import { MaxInWork } from "../cap/max-in-work.js";
import type { ClaimSetup, ClaimStrategy } from "../claim-strategy.js";
import { groupOf } from "../claim-strategy.js";
import { FORM_FACTS } from "../form-facts.js";
import { claimStrategyFor } from "../strategy-for.js";
import { RateLimitedClaim } from "./rate-limited-claim.js";
import { ensureSlots, RateSlots, slotPlace } from "./rate-slots.js";

/**
 * A subscription's claim strategy with its flow control: a cap on rows in work (`maxInWork`, held as
 * the form holds it: `claim/cap/`) and a rate limit (`rateLimit`). With neither, the form's strategy
 * itself: a claim runs no statement and no await more than it would without them.
 *
 * The slots a limit needs are inserted here, at startup, so a missing slot table fails the start
 * with a `Schema` error naming it.
 */
export async function flowControlledStrategy(setup: ClaimSetup, options: Pick<QueueOptions, "maxInWork" | "rateLimit">): Promise<ClaimStrategy> {
  const { maxInWork, rateLimit } = options;
  if (maxInWork === undefined && rateLimit === undefined) return claimStrategyFor(setup);
  const { database, spec, subscription } = setup;
  const errorPlace = { subscription, table: spec.table };
  const capCounts = FORM_FACTS[spec.form].capCounts;
  let capped = setup;
  if (maxInWork !== undefined && capCounts !== "leases") {
    const place = slotPlace("cap", spec, subscription);
    // Slot rows are locked in each delivery's transaction; slot locks live on its session, no rows needed.
    if (capCounts === "slot rows") await ensureSlots(database, place, maxInWork, errorPlace);
    capped = { ...setup, capSlots: { place, n: maxInWork } };
  }
  let strategy = claimStrategyFor(capped);
  if (maxInWork !== undefined && capCounts === "leases") {
    const count = new LeaseCount(maxInWork, { flow: database.dialect.flow, spec, group: groupOf(setup), clock: setup.clock });
    strategy = new CappedClaim(strategy, new MaxInWork(count), (query) => database.execute("claim", query));
  }
  if (rateLimit !== undefined) {
    const place = slotPlace("rate", spec, subscription);
    await ensureSlots(database, place, rateLimit.max, errorPlace);
    strategy = new RateLimitedClaim(strategy, new RateSlots(database, place, rateLimit), setup);
  }
  return strategy;
}
