/** The shared transaction's bookkeeping, driven by recording callbacks (no database: the order it writes and ends in, not how a transaction is kept). */
import { describe, expect, it } from "vitest";
import { SharedTransaction } from "../../../src/claim/held/shared-transaction.js";

const place = { subscription: "jobs", table: "jobs" };

function recording(rows: number, options: { ackFails?: boolean } = {}): { shared: SharedTransaction; events: string[] } {
  const events: string[] = [];
  const shared = new SharedTransaction(rows, {
    commit: async () => void events.push("commit"),
    rollback: async () => void events.push("rollback"),
    uncount: async (ids) => void events.push(`uncount ${ids.join(",")}`),
    ackMany: async (ids) => {
      events.push(`ack ${ids.join(",")}`);
      if (options.ackFails === true) throw new Error("ack failed");
    },
  });
  return { shared, events };
}

/** A write that records its start and end, finishing a turn later. */
const write =
  (events: string[], name: string, fail = false) =>
  async () => {
    events.push(`start ${name}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
    events.push(`end ${name}`);
    if (fail) throw new Error(`${name} failed`);
  };

describe("SharedTransaction", () => {
  it("writes settlements one at a time, in arrival order, and commits after the last", async () => {
    const { shared, events } = recording(3);
    await Promise.all(["a", "b", "c"].map((name) => shared.settle("ack", place, write(events, name))));
    expect(events).toEqual(["start a", "end a", "start b", "end b", "start c", "end c", "commit"]);
  });

  it("a failed write: the writes queued behind it are skipped, the transaction rolls back, every settlement fails with BatchRolledBack", async () => {
    const { shared, events } = recording(3);
    const settled = await Promise.allSettled([
      shared.settle("ack", place, write(events, "a", true)),
      shared.settle("ack", place, write(events, "b")),
      shared.settle("ack", place, write(events, "c")),
    ]);
    expect(events).toEqual(["start a", "end a", "rollback"]);
    expect(settled.map((s) => (s.status === "rejected" ? (s.reason as { code?: string }).code : "ok"))).toEqual(["BatchRolledBack", "BatchRolledBack", "BatchRolledBack"]);
  });

  it("rows that leave unstarted (a stop): once the rows in work arrived, their attempts are taken back after the writes, then it commits", async () => {
    const { shared, events } = recording(3);
    void shared.leave(2);
    void shared.leave(3);
    expect(shared.waiting).toBe(1);
    expect(events).toEqual([]);
    await shared.settle("ack", place, write(events, "a"));
    expect(events).toEqual(["start a", "end a", "uncount 2,3", "commit"]);
  });

  it("every row leaves unstarted: nothing to keep, the transaction rolls back", async () => {
    const { shared, events } = recording(2);
    void shared.leave(1);
    await shared.leave(2);
    expect(events).toEqual(["rollback"]);
  });

  it("rows given back after a failure (the grace is over): the transaction rolls back once the rows in work arrived, not before", async () => {
    const { shared, events } = recording(3);
    void shared.giveBack(new Error("stopped"));
    void shared.giveBack(new Error("stopped"));
    expect(shared.waiting).toBe(1);
    expect(events).toEqual([]);
    await expect(shared.settle("ack", place, write(events, "a"))).rejects.toMatchObject({ code: "BatchRolledBack" });
    expect(events).toEqual(["rollback"]);
    await shared.ended;
  });

  describe("acks", () => {
    it("acks are written together after every row arrived and the other writes ended, then the rows that left are uncounted, then it commits", async () => {
      const { shared, events } = recording(4);
      void shared.leave(4);
      const settled = Promise.all([shared.ack(1, "ack", place), shared.settle("retry", place, write(events, "retry 2")), shared.ack(3, "drop", place)]);
      await new Promise((resolve) => setImmediate(resolve));
      expect(events).toEqual(["start retry 2"]); // the acks wait for the last row
      await settled;
      expect(events).toEqual(["start retry 2", "end retry 2", "ack 1,3", "uncount 4", "commit"]);
    });

    it("an ack statement that fails rolls the transaction back: every settlement fails with BatchRolledBack", async () => {
      const { shared, events } = recording(2, { ackFails: true });
      const settled = await Promise.allSettled([shared.ack(1, "ack", place), shared.ack(2, "ack", place)]);
      expect(events).toEqual(["ack 1,2", "rollback"]);
      expect(settled.map((s) => (s.status === "rejected" ? (s.reason as { code?: string }).code : "ok"))).toEqual(["BatchRolledBack", "BatchRolledBack"]);
    });

    it("after a failed write, no ack statement runs: the transaction rolls back", async () => {
      const { shared, events } = recording(2);
      const settled = await Promise.allSettled([shared.settle("retry", place, write(events, "retry 1", true)), shared.ack(2, "ack", place)]);
      expect(events).toEqual(["start retry 1", "end retry 1", "rollback"]);
      expect(settled.every((s) => s.status === "rejected")).toBe(true);
    });
  });
});
