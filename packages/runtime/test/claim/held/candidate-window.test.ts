/**
 * The advisory form's candidate window, without a database: what a claim round reads, hands out,
 * sets aside and gives back, and when it reads again.
 */
import { describe, expect, it } from "vitest";
import { CANDIDATE_WINDOW_MS, CandidateWindow } from "../../../src/claim/held/candidate-window.js";

const row = (id: number, key: string) => ({ id, key });
const rows = (...keys: string[]) => keys.map((key, i) => row(i + 1, key));
const drain = (window: CandidateWindow) => {
  const out: unknown[] = [];
  for (let r = window.next(); r !== undefined; r = window.next()) out.push(r.id);
  return out;
};

describe("CandidateWindow", () => {
  it("hands the rows out in claim order, one at a time, and is fresh only while it has rows and is young", async () => {
    const window = new CandidateWindow();
    expect(window.fresh(0)).toBe(false); // never read
    await window.read(1_000, async () => rows("a", "b"));
    expect(window.fresh(1_000 + CANDIDATE_WINDOW_MS - 1)).toBe(true);
    expect(window.fresh(1_000 + CANDIDATE_WINDOW_MS)).toBe(false); // stale
    expect(window.next()?.id).toBe(1);
    expect(window.next()?.id).toBe(2);
    expect(window.next()).toBeUndefined();
    expect(window.fresh(1_001)).toBe(false); // every row handed out
  });

  it("claims that find it empty wait for the one read under way instead of reading again", async () => {
    const window = new CandidateWindow();
    let reads = 0;
    let finish!: (read: ReturnType<typeof rows>) => void;
    const read = () => {
      reads++;
      return new Promise<ReturnType<typeof rows>>((resolve) => (finish = resolve));
    };
    const first = window.read(0, read);
    const second = window.read(0, read);
    finish(rows("a", "b", "c"));
    await Promise.all([first, second]);
    expect(reads).toBe(1);
    expect(drain(window)).toEqual([1, 2, 3]);
    // The read is over: the next one reads.
    await window.read(10, async () => rows("d"));
    expect(reads).toBe(1);
    expect(drain(window)).toEqual([1]);
  });

  it("a read that fails leaves no read under way: the next claim reads again", async () => {
    const window = new CandidateWindow();
    await expect(window.read(0, () => Promise.reject(new Error("lost connection")))).rejects.toThrow("lost connection");
    await window.read(0, async () => rows("a"));
    expect(drain(window)).toEqual([1]);
  });

  it("rows set aside keep their key aside until given back, then go back in claim order", async () => {
    const window = new CandidateWindow();
    await window.read(0, async () => rows("a", "a", "b", "c"));
    const first = window.next()!;
    const second = window.next()!;
    const aside = [window.setAside(second, "a"), window.setAside(first, "a")];
    expect(window.asideKey("a")).toBe(true);
    expect(window.asideKey("b")).toBe(false);
    window.giveBack(aside);
    expect(window.asideKey("a")).toBe(false);
    // Back before the rows not handed out yet, by their rank: 1, 2, then 3, 4.
    expect(drain(window)).toEqual([1, 2, 3, 4]);
  });

  it("a key set aside twice stays aside until both rows are given back", async () => {
    const window = new CandidateWindow();
    await window.read(0, async () => rows("a", "a"));
    const one = window.setAside(window.next()!, "a");
    const two = window.setAside(window.next()!, "a");
    window.giveBack([one]);
    expect(window.asideKey("a")).toBe(true);
    window.giveBack([two]);
    expect(window.asideKey("a")).toBe(false);
  });

  it("a row set aside from an older read is dropped when given back: the newer read holds every row still claimable", async () => {
    const window = new CandidateWindow();
    await window.read(0, async () => rows("a", "b"));
    const old = window.setAside(window.next()!, "a");
    await window.read(10, async () => [row(2, "b"), row(3, "c")]);
    window.giveBack([old]);
    expect(window.asideKey("a")).toBe(false);
    expect(drain(window)).toEqual([2, 3]);
  });

  it("invalidate (a publish in this process) empties it: the next claim reads afresh, and rows set aside before are dropped", async () => {
    const window = new CandidateWindow();
    await window.read(0, async () => rows("a", "b"));
    const aside = window.setAside(window.next()!, "a");
    window.invalidate();
    expect(window.fresh(1)).toBe(false);
    expect(window.next()).toBeUndefined();
    window.giveBack([aside]);
    expect(window.next()).toBeUndefined();
  });
});
