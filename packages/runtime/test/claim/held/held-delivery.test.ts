/** The held-delivery state machine shared by row lock and advisory, driven by a recording form (no database: what it decides, not how a hold is kept). */
import { describe, expect, it } from "vitest";
import { HeldDelivery, type HoldingForm } from "../../../src/claim/held/held-delivery.js";
import { decideSettlement } from "../../../src/claim/settlement.js";
import { HandlerOutcome } from "../../../src/index.js";
import { ParkedRows } from "../../../src/claim/parked-rows.js";
import { PausedClock } from "../../../src/testing/index.js";

const place = { subscription: "reports", table: "report_jobs", id: 1 };

function setUp(options: { retryAfterColumn?: boolean; closed?: boolean } = {}) {
  const calls: string[] = [];
  const clock = new PausedClock(new Date("2026-01-01T00:00:00Z"));
  let closed = options.closed ?? false;
  const parked = new ParkedRows(clock);
  const form: HoldingForm<string> = {
    held: "row",
    clock,
    parked,
    isClosed: () => closed,
    closedBeforeSettle: async (d) => void calls.push(`closedBeforeSettle ${d.hold}`),
    abandon: (d) => void calls.push(`abandon ${d.hold}`),
    settle: async (d, settlement) => void calls.push(`settle ${d.hold} ${settlement.outcome.kind}`),
  };
  const held = new HeldDelivery(form, { id: 1 }, 1, 2, place, "trx");
  // The settlement as its delivery run decides it: a delay parks the row where the table has no retryAfter column.
  const rules = { maxAttempts: undefined, deadLetter: true, keepMs: 1_000, storesDelay: options.retryAfterColumn === true };
  const delivery = {
    settle: (outcome: HandlerOutcome) =>
      new Promise<void>((resolve, reject) => held.settle(decideSettlement(outcome, held.attempt, rules, String), { settled: (ok, error) => (ok ? resolve() : reject(error)) })),
    abandon: (reason: unknown) => held.abandon(reason),
    leaseDeadline: () => held.leaseDeadline(),
    get signal() {
      return held.signal;
    },
  };
  return { calls, clock, delivery, parked, close: () => (closed = true) };
}

describe("HeldDelivery", () => {
  it("settles once on its hold", async () => {
    const { calls, delivery } = setUp();
    await delivery.settle(HandlerOutcome.ack());
    expect(calls).toEqual(["settle trx ack"]);
    await expect(delivery.settle(HandlerOutcome.ack())).rejects.toMatchObject({ code: "Declaration", message: expect.stringContaining("already settled") });
    expect(delivery.leaseDeadline()).toBeUndefined();
    expect(delivery.signal.aborted).toBe(false);
  });

  it("a settlement after the broker closed gives the hold back and fails with Closed", async () => {
    const { calls, delivery, close } = setUp();
    close();
    await expect(delivery.settle(HandlerOutcome.retry())).rejects.toMatchObject({ code: "Closed", message: expect.stringContaining("the claim was rolled back") });
    expect(calls).toEqual(["closedBeforeSettle trx"]);
    await expect(delivery.settle(HandlerOutcome.ack())).rejects.toMatchObject({ code: "Closed" });
  });

  it("abandoned while held: the signal aborts, the hold ends at once, a late settlement fails with Closed", async () => {
    const { calls, delivery } = setUp();
    delivery.abandon(new Error("grace over"));
    delivery.abandon(new Error("twice"));
    expect(delivery.signal.aborted).toBe(true);
    expect(calls).toEqual(["abandon trx"]);
    await expect(delivery.settle(HandlerOutcome.ack())).rejects.toMatchObject({ code: "Closed" });
    expect(calls).toEqual(["abandon trx", "closedBeforeSettle trx"]);
  });

  it("retryAfter without a retryAfter column settles at once (nothing held for the delay) and parks the id in this process", async () => {
    const { calls, clock, delivery, parked } = setUp();
    await delivery.settle(HandlerOutcome.retryAfter(5_000));
    expect(calls).toEqual(["settle trx retryAfter"]);
    expect(clock.pending).toBe(0);
    expect(parked.ids()).toEqual([1]);
    clock.fireDue(clock.now().getTime() + 4_999);
    expect(parked.ids()).toEqual([1]);
    clock.fireDue(clock.now().getTime() + 1);
    expect(parked.ids()).toEqual([]);
  });

  it("with a retryAfter column the row is hidden by the settlement, not held nor parked", async () => {
    const { calls, delivery, parked } = setUp({ retryAfterColumn: true });
    await delivery.settle(HandlerOutcome.retryAfter(5_000));
    expect(calls).toEqual(["settle trx retryAfter"]);
    expect(parked.size).toBe(0);
  });

  it("abandoned after its settlement began: the hold is not ended twice", async () => {
    const { calls, delivery } = setUp();
    const settled = delivery.settle(HandlerOutcome.retryAfter(60_000));
    delivery.abandon(new Error("grace over"));
    await settled;
    expect(calls).toEqual(["settle trx retryAfter"]);
  });
});
