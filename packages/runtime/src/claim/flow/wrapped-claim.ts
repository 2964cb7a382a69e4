import type { ClaimedDelivery, ClaimProfile, ClaimStrategy } from "../claim-strategy.js";

/**
 * A claim strategy around a form's own (a cap, a rate limit): it decides how many rows a claim may
 * take and passes everything else to `inner` — giving rows back, its held transactions, start, stop.
 */
export abstract class WrappedClaim implements ClaimStrategy {
  abstract readonly profile: ClaimProfile;
  protected readonly inner: ClaimStrategy;

  constructor(inner: ClaimStrategy) {
    this.inner = inner;
  }

  abstract claim(limit: number): Promise<ClaimedDelivery[]>;

  get heldTransactions(): number {
    return this.inner.heldTransactions;
  }

  releaseUnstarted(deliveries: readonly ClaimedDelivery[], routine?: boolean): Promise<void> {
    return this.inner.releaseUnstarted(deliveries, routine);
  }

  invalidate(): void {
    this.inner.invalidate();
  }

  start(): void {
    this.inner.start();
  }

  stop(): void {
    this.inner.stop();
  }
}
