import { describe, expect, it } from "vitest";
import { SlotSet } from "../../src/claim/slot-set.js";

const item = (name: string) => ({ name, slot: -1 });

describe("SlotSet: the hot path's set of deliveries in work and leases held", () => {
  it("adds, deletes and counts; a freed slot is taken by the next add", () => {
    const set = new SlotSet<ReturnType<typeof item>>();
    const [a, b, c] = [item("a"), item("b"), item("c")];
    set.add(a);
    set.add(b);
    expect(set.size).toBe(2);
    expect([a.slot, b.slot]).toEqual([0, 1]);
    expect(set.delete(a)).toBe(true);
    expect(a.slot).toBe(-1);
    expect(set.size).toBe(1);
    set.add(c);
    expect(c.slot).toBe(0);
    expect([...set].map((x) => x.name).sort()).toEqual(["b", "c"]);
  });

  it("ignores a second add of an item it holds, and a delete of an item it does not hold", () => {
    const set = new SlotSet<ReturnType<typeof item>>();
    const other = new SlotSet<ReturnType<typeof item>>();
    const a = item("a");
    const b = item("b");
    set.add(a);
    set.add(a);
    expect(set.size).toBe(1);
    other.add(b); // b.slot is 0, as a's is: the set tells them apart by what the slot holds
    expect(set.delete(b)).toBe(false);
    expect(set.size).toBe(1);
    expect(other.size).toBe(1);
    expect(set.delete(a)).toBe(true);
    expect(set.delete(a)).toBe(false);
    expect(set.size).toBe(0);
  });

  it("has: an item it holds, not one another set holds in the same slot, nor one deleted", () => {
    const set = new SlotSet<ReturnType<typeof item>>();
    const other = new SlotSet<ReturnType<typeof item>>();
    const [a, b] = [item("a"), item("b")];
    set.add(a);
    other.add(b);
    expect([set.has(a), set.has(b), other.has(b)]).toEqual([true, false, true]);
    set.delete(a);
    expect(set.has(a)).toBe(false);
  });

  it("a walk skips the items deleted while it goes on", () => {
    const set = new SlotSet<ReturnType<typeof item>>();
    const items = ["a", "b", "c", "d"].map(item);
    for (const x of items) set.add(x);
    const seen: string[] = [];
    for (const x of set) {
      seen.push(x.name);
      if (x.name === "a") set.delete(items[2] as ReturnType<typeof item>);
      set.delete(x);
    }
    expect(seen).toEqual(["a", "b", "d"]);
    expect(set.size).toBe(0);
  });
});
