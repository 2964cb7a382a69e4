/**
 * How far the host's clock is from the database's, NTP-style: the host reads its clock, asks the
 * server for its own, reads its clock again. The server read its clock somewhere in between, most
 * likely near the middle, and never further from it than half the round trip: the sample with the
 * shortest round trip bounds the offset best.
 */

/** One reading of the server's clock between two readings of the host's (epoch ms). */
export interface ClockSample {
  readonly sentAt: number;
  readonly serverAt: number;
  readonly receivedAt: number;
}

/** The host's clock against the database's: the database's time is the host's plus `offsetMs`. */
export interface ClockOffset {
  /** Database minus host, in ms: positive when the host's clock is behind. */
  readonly offsetMs: number;
  /** The round trip of the sample it comes from: the offset is right to within half of it. */
  readonly roundTripMs: number;
  /** The sample's readings: the server's clock, and the host's at the midpoint of the round trip. */
  readonly serverAt: number;
  readonly hostAt: number;
}

/** The offset of the sample with the shortest round trip (`samples` must not be empty). */
export function offsetOf(samples: readonly ClockSample[]): ClockOffset {
  let best: ClockOffset | undefined;
  for (const { sentAt, serverAt, receivedAt } of samples) {
    const roundTripMs = Math.max(0, receivedAt - sentAt);
    const hostAt = sentAt + roundTripMs / 2;
    if (best === undefined || roundTripMs < best.roundTripMs) best = { offsetMs: serverAt - hostAt, roundTripMs, serverAt, hostAt };
  }
  if (best === undefined) throw new RangeError("offsetOf needs at least one sample");
  return best;
}

/** A skew past this is worth a warning whatever is done about it. */
export const WARN_SKEW_MS = 1_000;

/**
 * With the host's clock trusted as it is (`leaseClock: "host"`), the largest skew an app starts
 * with: a quarter of its shortest lease. Past that, a process whose clock is ahead takes rows before
 * their holder's lease has run out, and a process whose clock is behind keeps rows it has lost.
 */
export function tolerableSkewMs(leaseMs: number): number {
  return leaseMs / 4;
}

/** `1.2 s ahead of`, `60.0 s behind`: how the host's clock stands against the database's. */
export function describeSkew(offsetMs: number): string {
  const seconds = (Math.abs(offsetMs) / 1000).toFixed(1);
  return offsetMs < 0 ? `${seconds} s ahead of` : `${seconds} s behind`;
}
