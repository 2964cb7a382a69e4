import { describe, expect, it } from "vitest";
import { claimPaceFor, claimsToCover, MAX_CLAIMS_AHEAD, MIN_CLAIMS_AHEAD, rowsToClaim, type ClaimPace, type PaceShape } from "../../src/consume/claim-pacer.js";

const lease = (workers: number, batch: number): PaceShape => ({ workers, batch, mode: "ahead" });
const advisory = (workers: number, batch: number): PaceShape => ({ workers, batch, mode: "perWorker" });
const rowLock = (workers: number, batch: number): PaceShape => ({ workers, batch, mode: "oneRow" });
/** Row lock with `.sharedTransaction()`: one transaction claims up to `batch` rows, which wait in the buffer. */
const sharedRowLock = (workers: number, batch: number): PaceShape => ({ workers, batch, mode: "shared" });
/** A batch handler: `workers` batches in work, a whole batch per claim (the same pace on any form). */
const batchHandler = (workers: number, batch: number): PaceShape => ({ workers, batch, mode: "wholeBatches" });

type Counters = Partial<Pick<ClaimPace, "inFlight" | "buffered" | "claims" | "claiming" | "settling" | "drained" | "aheadClaims" | "heldTransactions">>;

/** Not drained unless a row says so: most rows test the steady state. */
function ask(shape: PaceShape, counters: Counters): number {
  const pace = claimPaceFor(shape);
  Object.assign(pace, { drained: false }, counters);
  return rowsToClaim(pace);
}

describe("claimPaceFor: the shape", () => {
  it.each([
    // shape, maxClaims, maxSettling
    ["lease w1 b1", lease(1, 1), 2, 4],
    ["lease w8 b1", lease(8, 1), 8, 32],
    ["lease w4 b16: claims ahead keep 2 in flight", lease(4, 16), 2, 64],
    ["lease w10 b4", lease(10, 4), 3, 40],
    ["advisory w1 b1", advisory(1, 1), 1, 4],
    ["advisory w4 b16", advisory(4, 16), 1, 64],
    ["advisory w8 b2", advisory(8, 2), 4, 32],
    ["row lock w8 b1: one claim per worker", rowLock(8, 1), 8, 32],
    ["row lock w3 b10", rowLock(3, 10), 3, 40],
    ["shared row lock w8 b64: the next claim while the last one runs; every open transaction writing", sharedRowLock(8, 64), 2, 512],
    ["shared row lock w8 b2", sharedRowLock(8, 2), 2, 32],
    ["shared row lock w1 b64: one claim (one connection)", sharedRowLock(1, 64), 1, 256],
    ["batch handler w8 b64: a claim per worker", batchHandler(8, 64), 8, 256],
    ["batch handler on a lease table w2 b16", batchHandler(2, 16), 2, 64],
  ] as const)("%s", (_name, shape, maxClaims, maxSettling) => {
    const pace = claimPaceFor(shape);
    expect(pace).toMatchObject({ maxClaims, maxSettling, inFlight: 0, buffered: 0, claims: 0, claiming: 0, settling: 0, drained: true });
  });
});

describe("rowsToClaim", () => {
  it.each<[string, PaceShape, Counters, number]>([
    // The drained rule: one claim at a time until one comes back full.
    ["drained, idle: one claim", lease(4, 16), { drained: true }, 16],
    ["drained, one claim running: none", lease(4, 16), { drained: true, claims: 1, claiming: 16 }, 0],
    ["drained row lock, one claim running: none though workers are free", rowLock(8, 1), { drained: true, claims: 1, claiming: 1 }, 0],
    ["not drained row lock, one claim running: another", rowLock(8, 1), { claims: 1, claiming: 1 }, 1],
    ["drained advisory, idle: up to free workers", advisory(4, 2), { drained: true }, 2],

    // maxClaims.
    ["lease at maxClaims: none", lease(4, 16), { claims: 2, claiming: 32 }, 0],
    ["row lock at maxClaims (= workers): none", rowLock(3, 1), { claims: 3, claiming: 3 }, 0],
    ["advisory below maxClaims, free workers: claim", advisory(8, 2), { claims: 3, claiming: 6 }, 2],
    ["advisory at maxClaims: none", advisory(8, 2), { claims: 4, claiming: 8 }, 0],

    // maxSettling: memory stays bounded when settlements are slow.
    ["lease, settlings at the bound: none", lease(2, 4), { settling: 16 }, 0],
    ["lease, settlings one below the bound: claim", lease(2, 4), { settling: 15 }, 4],
    ["row lock, settlings at the bound: none", rowLock(2, 1), { settling: 8 }, 0],
    ["advisory, settlings above the bound: none", advisory(2, 1), { settling: 9 }, 0],

    // Claims ahead (lease): an uncovered worker gets a whole batch.
    ["lease idle: a batch", lease(4, 16), {}, 16],
    ["lease, every worker busy, buffer holds a batch: none", lease(4, 16), { inFlight: 4, buffered: 16 }, 0],
    ["lease, every worker busy, empty buffer: none (no worker between deliveries)", lease(4, 16), { inFlight: 4 }, 0],
    ["lease, a free worker covered by the buffer, buffer a batch: none", lease(4, 16), { inFlight: 3, buffered: 16 }, 0],
    ["lease, free workers covered by a running claim of a full batch: none", lease(2, 4), { inFlight: 1, claims: 1, claiming: 4 }, 0],
    // The refill rule: a worker is free and less than a batch is on hand.
    ["lease refill: worker free, buffer + claiming below a batch", lease(4, 16), { inFlight: 3, buffered: 5, claims: 0 }, 16],
    ["lease refill: counts rows the running claim may bring", lease(4, 16), { inFlight: 3, buffered: 5, claims: 1, claiming: 11 }, 0],
    ["lease refill: one below a batch on hand", lease(4, 16), { inFlight: 3, buffered: 5, claims: 1, claiming: 10 }, 16],
    ["lease refill needs a free worker", lease(4, 16), { inFlight: 4, buffered: 1 }, 0],
    ["lease uncovered workers though a batch is on hand", lease(8, 2), { inFlight: 0, buffered: 2, claims: 1, claiming: 2 }, 2],
    ["lease w8 b1: each free worker its own claim", lease(8, 1), { inFlight: 5, claims: 2, claiming: 2 }, 1],
    ["lease w8 b1: free workers all covered by claims", lease(8, 1), { inFlight: 5, claims: 3, claiming: 3 }, 0],

    // Holding forms: never more rows than free workers.
    ["advisory idle: min(batch, free)", advisory(4, 16), {}, 4],
    ["advisory, batch below free workers: batch", advisory(8, 2), {}, 2],
    ["advisory, two workers free: two", advisory(4, 16), { inFlight: 2 }, 2],
    ["advisory, free workers spoken for by a running claim: none", advisory(8, 2), { inFlight: 6, claims: 1, claiming: 2 }, 0],
    ["advisory, every worker busy: none", advisory(4, 16), { inFlight: 4 }, 0],
    ["advisory ignores buffered rows (never buffers)", advisory(4, 16), { buffered: 3 }, 4],
    // Row lock: one-row claims, side by side.
    ["row lock idle: one row", rowLock(4, 16), {}, 1],
    ["row lock, free workers left: one row", rowLock(4, 16), { inFlight: 1, claims: 2, claiming: 2 }, 1],
    ["row lock, free workers spoken for: none", rowLock(4, 16), { inFlight: 2, claims: 2, claiming: 2 }, 0],
    ["row lock, every worker busy: none", rowLock(4, 1), { inFlight: 4 }, 0],
    // Shared row lock: a whole batch in one transaction (one connection), buffered; open transactions within workers.
    ["shared row lock idle: a whole batch, more rows than workers", sharedRowLock(8, 64), {}, 64],
    ["shared row lock, two workers free: a whole batch", sharedRowLock(8, 4), { inFlight: 6 }, 4],
    ["shared row lock, buffer holds a batch: none", sharedRowLock(8, 64), { inFlight: 8, buffered: 64, heldTransactions: 1 }, 0],
    ["shared row lock refill: less than a batch on hand, a worker free", sharedRowLock(8, 64), { inFlight: 7, buffered: 40, heldTransactions: 1 }, 64],
    ["shared row lock refill counts the running claim", sharedRowLock(8, 64), { inFlight: 7, buffered: 40, claims: 1, claiming: 64, heldTransactions: 1 }, 0],
    ["shared row lock, every worker busy, empty buffer: none", sharedRowLock(8, 64), { inFlight: 8, heldTransactions: 3 }, 0],
    ["shared row lock, settlings of 4 batches: still a claim (the open transactions bound them)", sharedRowLock(8, 64), { inFlight: 2, heldTransactions: 4, settling: 256 }, 64],
    ["shared row lock, open transactions at workers: none though workers are free", sharedRowLock(8, 64), { inFlight: 2, heldTransactions: 8 }, 0],
    ["shared row lock, open transactions and a claim at workers: none", sharedRowLock(8, 64), { heldTransactions: 7, claims: 1, claiming: 64 }, 0],
    ["shared row lock, one connection left: a claim", sharedRowLock(8, 64), { inFlight: 2, heldTransactions: 7 }, 64],
    ["shared row lock w1: one transaction at a time", sharedRowLock(1, 64), { heldTransactions: 1 }, 0],
    ["shared row lock at maxClaims: none", sharedRowLock(8, 64), { claims: 2, claiming: 128 }, 0],
    ["shared row lock drained, one claim running: none", sharedRowLock(8, 64), { drained: true, claims: 1, claiming: 64 }, 0],
    // A batch handler: inFlight counts batches; a free worker takes a whole batch, never buffered.
    ["batch handler idle: a batch", batchHandler(8, 64), {}, 64],
    ["batch handler, one batch slot free: a batch", batchHandler(8, 64), { inFlight: 7 }, 64],
    ["batch handler, free slots spoken for by claims: none", batchHandler(8, 64), { inFlight: 6, claims: 2, claiming: 128 }, 0],
    ["batch handler, every slot busy: none", batchHandler(2, 16), { inFlight: 2 }, 0],
    ["batch handler drained, one claim running: none", batchHandler(8, 64), { drained: true, claims: 1, claiming: 64 }, 0],
    // Claims in flight sized from latency (lease): aheadClaims raises the cap and the rows kept coming.
    ["lease, aheadClaims 4: a third claim while fewer than 3 batches are coming", lease(8, 64), { inFlight: 2, claims: 2, claiming: 128, aheadClaims: 4 }, 64],
    ["lease, aheadClaims 4: none once 3 batches are on hand or coming", lease(8, 64), { inFlight: 2, buffered: 64, claims: 2, claiming: 128, aheadClaims: 4 }, 0],
    ["lease, aheadClaims 4: none at 4 claims", lease(8, 64), { inFlight: 2, claims: 4, claiming: 128, aheadClaims: 4 }, 0],
    ["lease, aheadClaims 4 but drained: one claim at a time", lease(8, 64), { drained: true, claims: 1, claiming: 64, aheadClaims: 4 }, 0],
    ["lease, aheadClaims 4 needs a worker between deliveries", lease(8, 64), { inFlight: 8, claims: 1, claiming: 64, aheadClaims: 4 }, 0],
    ["row lock ignores aheadClaims", rowLock(2, 1), { claims: 2, claiming: 2, aheadClaims: 8 }, 0],
    // Shared row-lock claims are sized from latency too: each is a transaction, within the workers' connections.
    [
      "shared row lock, aheadClaims 4: a third claim while fewer than 3 batches are on hand or coming",
      sharedRowLock(8, 64),
      { inFlight: 2, claims: 2, claiming: 128, aheadClaims: 4 },
      64,
    ],
    ["shared row lock, aheadClaims 4: none once 3 batches are on hand or coming", sharedRowLock(8, 64), { inFlight: 2, buffered: 64, claims: 2, claiming: 128, aheadClaims: 4 }, 0],
    ["shared row lock, aheadClaims 4: none at 4 claims", sharedRowLock(8, 64), { claims: 4, claiming: 256, aheadClaims: 4 }, 0],
    ["shared row lock w3, aheadClaims 4: no more claims than workers", sharedRowLock(3, 64), { claims: 3, claiming: 192, aheadClaims: 4 }, 0],
    ["batch handler ignores aheadClaims", batchHandler(2, 16), { claims: 2, claiming: 32, aheadClaims: 8 }, 0],
  ])("%s", (_name, shape, counters, rows) => {
    expect(ask(shape, counters)).toBe(rows);
  });

  it("a subscription's first asks: starting drained, then the pacer stops after the one claim", () => {
    const pace = claimPaceFor(rowLock(4, 1));
    expect(rowsToClaim(pace)).toBe(1);
    pace.claims = 1;
    pace.claiming = 1;
    expect(rowsToClaim(pace)).toBe(0);
    pace.drained = false; // that claim came back full
    const started: number[] = [];
    for (let limit = rowsToClaim(pace); limit > 0; limit = rowsToClaim(pace)) {
      started.push(limit);
      pace.claims++;
      pace.claiming += limit;
    }
    expect(started).toEqual([1, 1, 1]);
  });
});

describe("claimsToCover: claims in flight from claim latency and handler time", () => {
  it.each<[string, number, number, number, number, number]>([
    // name, claim ms, handler ms, workers, batch, claims
    ["no latency measured yet: the minimum", 0, 1, 8, 64, MIN_CLAIMS_AHEAD],
    ["slow handlers: one batch lasts longer than a claim, the minimum", 3, 20, 8, 64, MIN_CLAIMS_AHEAD],
    ["3 ms claims, 0.05 ms handlers, 8 workers, batch 64: 480 rows while claiming → 8 batches + 1, capped", 3, 0.05, 8, 64, MAX_CLAIMS_AHEAD],
    ["MAX_CLAIMS_AHEAD is 4", 3, 0.05, 8, 64, 4],
    ["3 ms claims, 0.2 ms handlers, 8 workers, batch 64: 120 rows → 2 batches + 1", 3, 0.2, 8, 64, 3],
    ["2 ms claims, 0.1 ms handlers, 4 workers, batch 16: 80 rows → 5 batches + 1, capped at 4", 2, 0.1, 4, 16, 4],
    ["2 ms claims, 0.5 ms handlers, 4 workers, batch 16: 16 rows → 1 batch + 1", 2, 0.5, 4, 16, 2],
    ["1 ms claims, 0.1 ms handlers, 4 workers, batch 16: 40 rows → 3 batches + 1 = 4", 1, 0.1, 4, 16, 4],
    ["1 ms claims, 0.15 ms handlers, 4 workers, batch 16: 27 rows → 2 batches + 1 = 3", 1, 0.15, 4, 16, 3],
    ["a no-op handler counts as the floor (0.002 ms): 1 ms claims, 1 worker, batch 500 → 500 rows, 1 batch + 1", 1, 0, 1, 500, 2],
    ["batch 500, 3 ms claims, 0.01 ms handlers, 8 workers: 2,400 rows → 5 + 1, but 500-row claims past MAX_ROWS_AHEAD: the minimum", 3, 0.01, 8, 500, MIN_CLAIMS_AHEAD],
    ["batch 256, fast handlers: MAX_ROWS_AHEAD / 256 = 2 claims", 3, 0.01, 8, 256, 2],
  ])("%s", (_name, claimMs, handlerMs, workers, batch, claims) => {
    expect(claimsToCover(claimMs, handlerMs, workers, batch)).toBe(claims);
  });
});

describe("claims ahead where claims contend on the server", () => {
  it("measures claim latency to raise claims ahead where claims side by side hide it (MySQL/MariaDB's lease claim)", () => {
    const pace = claimPaceFor({ workers: 8, batch: 64, mode: "ahead", sideBySide: true });
    expect(pace.measures).toBe(true);
  });

  it("keeps the minimum where claims contend (Postgres's one-statement lease claim), and on a single writer", () => {
    expect(claimPaceFor({ workers: 8, batch: 64, mode: "ahead", sideBySide: true, contend: true }).measures).toBe(false);
    expect(claimPaceFor({ workers: 8, batch: 64, mode: "ahead", sideBySide: false }).measures).toBe(false);
    const pace = claimPaceFor({ workers: 8, batch: 64, mode: "ahead", sideBySide: true, contend: true });
    pace.drained = false;
    let claims = 0;
    for (let limit = rowsToClaim(pace); limit > 0; limit = rowsToClaim(pace)) {
      claims++;
      pace.claims++;
      pace.claiming += limit;
    }
    expect(claims).toBe(MIN_CLAIMS_AHEAD);
  });
});
