/** The shared transaction's bookkeeping, driven by recording callbacks (no database: the order it writes and ends in, not how a transaction is kept). */
import { describe, expect, it } from "vitest";
import { SharedTransaction } from "../src/claim/shared-transaction.js";

const place = { subscription: "jobs", table: "jobs" };

function recording(rows: number, serial = true): { shared: SharedTransaction; events: string[] } {
  const events: string[] = [];
  const shared = new SharedTransaction(
    rows,
    async () => void events.push("commit"),
    async () => void events.push("rollback"),
    async (ids) => void events.push(`uncount ${ids.join(",")}`),
    serial,
  );
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

  // A transaction on a held session (not Kysely's): the driver runs the connection's statements in turn itself.
  describe("on a held session (not serial)", () => {
    it("hands each write to the connection at once, and commits only after the last one ended", async () => {
      const { shared, events } = recording(3, false);
      await Promise.all(["a", "b", "c"].map((name) => shared.settle("ack", place, write(events, name))));
      expect(events.slice(0, 3)).toEqual(["start a", "start b", "start c"]);
      expect(events.slice(3, 6).sort()).toEqual(["end a", "end b", "end c"]);
      expect(events[6]).toBe("commit");
      expect(events).toHaveLength(7);
    });

    it("a failed write: the transaction rolls back after every write ended, a write arriving after the failure is skipped, every settlement fails with BatchRolledBack", async () => {
      const { shared, events } = recording(3, false);
      const first = [shared.settle("ack", place, write(events, "a", true)), shared.settle("ack", place, write(events, "b"))];
      await new Promise((resolve) => setTimeout(resolve, 20));
      const late = shared.settle("ack", place, write(events, "c"));
      const settled = await Promise.allSettled([...first, late]);
      expect(events).toEqual(["start a", "start b", "end a", "end b", "rollback"]);
      expect(settled.map((s) => (s.status === "rejected" ? (s.reason as { code?: string }).code : "ok"))).toEqual(["BatchRolledBack", "BatchRolledBack", "BatchRolledBack"]);
    });

    it("rows that leave unstarted: their attempts are taken back after the writes in work ended, then it commits", async () => {
      const { shared, events } = recording(3, false);
      void shared.leave(3);
      await Promise.all([shared.settle("ack", place, write(events, "a")), shared.settle("ack", place, write(events, "b"))]);
      expect(events).toEqual(["start a", "start b", "end a", "end b", "uncount 3", "commit"]);
    });
  });
});
