/**
 * `maxInWork`'s one home, without a database: when a claim was cut by the cap (what makes an
 * ending delivery start a claim at once), the process-held slot count (SQLite's advisory slots)
 * and the database's key registry. The holds that run statements (`LeaseCount`, `SlotRows`,
 * `SlotLocks` on a session) are tested live in max-in-work.test.ts on every engine.
 */
import { describe, expect, it } from "vitest";
import { type CapHold, type CappedClaimEnd, type CapRun, MaxInWork } from "../../../src/claim/cap/max-in-work.js";
import { SlotLocks } from "../../../src/claim/cap/slot-locks.js";
import { SlotRows } from "../../../src/claim/cap/slot-rows.js";
import { mysqlDialect, postgresDialect } from "@sqlinbox/kysely-dialects";
import { KeyRegistry } from "../../../src/claim/held/key-registry.js";
import { CappedClaim } from "../../../src/claim/cap/capped-claim.js";
import { FORM_FACTS } from "../../../src/claim/form-facts.js";
import type { ClaimedDelivery, ClaimStrategy } from "../../../src/claim/claim-strategy.js";

/** A hold that gives whatever room it is told: only `MaxInWork`'s own bookkeeping is under test here. */
const room = (n: number): CapHold => ({
  n,
  take: async (_run, want) => Array.from({ length: Math.min(want, n) }, (_, i) => i),
  release: async () => {},
  kept: async (_run, taken) => taken,
});
const noStatement = () => Promise.reject(new Error("a process-held slot runs no statement"));

describe("MaxInWork.ended: only a short claim says whether the cap cut it", () => {
  it.each<[string, CappedClaimEnd, boolean]>([
    ["no room at all", { wanted: 4, room: 0, taken: 0, kept: 0 }, true],
    ["less room than wanted, every place used", { wanted: 4, room: 2, taken: 2, kept: 2 }, true],
    ["less room than wanted, fewer rows than room: the queue ran out", { wanted: 4, room: 2, taken: 1, kept: 1 }, false],
    ["room for all, fewer rows: the queue ran out", { wanted: 4, room: 4, taken: 3, kept: 3 }, false],
    ["rows went back (a recount found the cap overrun)", { wanted: 4, room: 4, taken: 4, kept: 2 }, true],
  ])("%s", (_name, end, full) => {
    const cap = new MaxInWork(room(4));
    cap.ended(end);
    expect(cap.atCap()).toBe(full);
  });

  it("a full claim leaves it as it was", () => {
    const cap = new MaxInWork(room(4));
    cap.ended({ wanted: 2, room: 0, taken: 0, kept: 0 });
    cap.ended({ wanted: 2, room: 2, taken: 2, kept: 2 });
    expect(cap.atCap()).toBe(true);
    cap.ended({ wanted: 2, room: 2, taken: 0, kept: 0 });
    cap.ended({ wanted: 1, room: 1, taken: 1, kept: 1 });
    expect(cap.atCap()).toBe(false);
  });

  it("refuses a cap that is not a positive integer; asks nothing for no rows", async () => {
    expect(() => new MaxInWork(room(0))).toThrow(/positive integer/);
    expect(() => new MaxInWork(room(1.5))).toThrow(/positive integer/);
    const cap = new MaxInWork({ ...room(2), kept: () => Promise.reject(new Error("asked")), release: () => Promise.reject(new Error("asked")) });
    expect(await cap.kept(noStatement, 0)).toBe(0);
    await cap.release(noStatement, []);
  });
});

describe("SlotRows: a claim that found every slot taken queues for one while its process holds less than half the cap", () => {
  const place = { name: "cap:jobs:a" };
  /** Runs statements by their text: the free slots (none), the wait's answer; records what ran. */
  const fakeRun = (wait: () => unknown[]) => {
    const ran: string[] = [];
    const run = (async (query: { sql: string }) => {
      ran.push(query.sql);
      if (query.sql.includes("skip locked")) return { rows: [] };
      if (query.sql.includes("for update")) return { rows: wait() };
      return { rows: [] };
    }) as CapRun;
    return { ran, run };
  };
  const kinds = (ran: readonly string[]) =>
    ran.map((text) => (text.includes("skip locked") ? "free" : text.includes("for update") ? "wait" : /set_config|= 1$/.test(text) ? "bound" : "unbound"));

  it.each<[number, number, boolean]>([
    [0, 1, true],
    [1, 1, false],
    [0, 2, true],
    [1, 2, false],
    [0, 3, true],
    [1, 3, true],
    [2, 3, false],
    [3, 3, false],
    [1, 4, true],
    [2, 4, false],
  ])("holding %i of %i: queues %s", async (held, n, queues) => {
    const { ran, run } = fakeRun(() => [{ slot: 0 }]);
    const places = await new SlotRows(n, place, postgresDialect.flow, () => held).take(run, 1);
    expect(kinds(ran)).toEqual(queues ? ["free", "bound", "wait", "unbound"] : ["free"]);
    expect(places).toEqual(queues ? [0] : []);
  });

  it("a shared claim's transaction never queues", async () => {
    const { ran, run } = fakeRun(() => [{ slot: 0 }]);
    expect(await new SlotRows(3, place, postgresDialect.flow, () => undefined).take(run, 2)).toEqual([]);
    expect(kinds(ran)).toEqual(["free"]);
  });

  it("a wait that runs out takes no slot and asks for the next claim at once; MySQL/MariaDB set the bound back, Postgres' rollback does", async () => {
    for (const [dialect, error, after] of [
      [postgresDialect, { code: "55P03" }, ["free", "bound", "wait"]],
      [mysqlDialect, { errno: 1205 }, ["free", "bound", "wait", "unbound"]],
    ] as const) {
      const { ran, run } = fakeRun(() => {
        throw error;
      });
      const slots = new SlotRows(3, place, dialect.flow, () => 0);
      expect(await slots.take(run, 1)).toEqual([]);
      expect(kinds(ran)).toEqual(after);
      expect(slots.waitedInVain).toBe(true);
    }
  });

  it("any other failure of the wait is the claim's", async () => {
    const { run } = fakeRun(() => {
      throw new Error("connection lost");
    });
    await expect(new SlotRows(3, place, mysqlDialect.flow, () => 0).take(run, 1)).rejects.toThrow("connection lost");
  });
});

describe("SlotLocks held in the process (advisory keys in the process: SQLite)", () => {
  it("counts places in the database's registry, per cap, and gives them back", async () => {
    const keys = new KeyRegistry();
    const place = { name: "cap:jobs:a" };
    const a = new SlotLocks(2, place, { process: keys });
    const b = new SlotLocks(2, place, { process: keys }); // another claim on the same database and cap shares the count
    const other = new SlotLocks(1, { name: "cap:jobs:b" }, { process: keys });
    expect(await a.take(noStatement, 1)).toHaveLength(1);
    expect(await b.take(noStatement, 5)).toHaveLength(1);
    expect(await a.take(noStatement, 1)).toHaveLength(0);
    expect(await other.take(noStatement, 1)).toHaveLength(1);
    await b.release(noStatement, ["cap:jobs:a"]);
    expect(await a.take(noStatement, 2)).toHaveLength(1);
    expect(await a.kept(noStatement, 3)).toBe(3);
  });

  it("two databases' registries count apart", async () => {
    const place = { name: "cap:jobs:a" };
    const one = new SlotLocks(1, place, { process: new KeyRegistry() });
    const two = new SlotLocks(1, place, { process: new KeyRegistry() });
    expect(await one.take(noStatement, 1)).toHaveLength(1);
    expect(await two.take(noStatement, 1)).toHaveLength(1);
  });
});

describe("KeyRegistry", () => {
  it("holds and drops keys", () => {
    const keys = new KeyRegistry();
    keys.hold("t:a");
    expect(keys.has("t:a")).toBe(true);
    expect(keys.has("t:b")).toBe(false);
    keys.drop("t:a");
    expect(keys.has("t:a")).toBe(false);
  });

  it("counts up to n places per name, never below zero", () => {
    const keys = new KeyRegistry();
    expect(keys.count("cap", 3, 2)).toBe(2);
    expect(keys.count("cap", 3, 2)).toBe(1);
    expect(keys.count("cap", 3, 1)).toBe(0);
    keys.uncount("cap", 3);
    keys.uncount("cap", 1);
    expect(keys.count("cap", 3, 5)).toBe(3);
  });
});

/**
 * The lease form's cap counts live leases twice around a claim (`LeaseCount`): room before, and what
 * to keep after the rows are committed. Here the "table" is a count of rows in work, and every step
 * yields to the event loop as a statement would, so claims started together interleave as they do live.
 */
function leaseTable(n: number) {
  const state = { inWork: 0, pending: 12 };
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const hold: CapHold = {
    n,
    take: async (_run, want) => {
      await turn();
      return Array.from({ length: Math.min(want, Math.max(0, n - state.inWork)) }, (_, i) => i);
    },
    release: async () => {},
    kept: async (_run, taken) => {
      await turn();
      return Math.min(taken, Math.max(0, n - (state.inWork - taken)));
    },
  };
  const inner: ClaimStrategy = {
    profile: Object.freeze({
      form: "lease",
      pace: "perWorker",
      claimsSideBySide: true,
      claimsContend: false,
      storesDelay: true,
      connectionsPerDelivery: 0,
      holdsWorker: false,
      batchSharesHold: false,
      describedAs: FORM_FACTS.lease.describedAs,
      stop: FORM_FACTS.lease.stop,
    }),
    heldTransactions: 0,
    claim: async (limit) => {
      await turn();
      const rows = Math.min(limit, state.pending);
      state.pending -= rows;
      state.inWork += rows;
      return Array.from({ length: rows }, () => ({}) as ClaimedDelivery);
    },
    releaseUnstarted: async (deliveries) => {
      await turn();
      state.inWork -= deliveries.length;
      state.pending += deliveries.length;
    },
    invalidate: () => {},
    start: () => {},
    stop: () => {},
  };
  return { state, hold, inner };
}

describe("CappedClaim (the lease form's cap)", () => {
  it("claims of one process run one after another: four at once under a cap of 2 keep 2, never give every row back", async () => {
    const { state, hold, inner } = leaseTable(2);
    const capped = new CappedClaim(inner, new MaxInWork(hold), noStatement);
    const kept = await Promise.all([1, 2, 3, 4].map(() => capped.claim(1)));
    // Side by side, each claim's recount saw the other three and all four went back: nothing in work, and
    // no delivery whose end would wake a claim before the poll interval.
    expect(kept.map((rows) => rows.length)).toEqual([1, 1, 0, 0]);
    expect(state.inWork).toBe(2);
    expect(capped.atCap()).toBe(true);
  });

  it("a claim that gave rows back (another process's claim ran beside it) is followed by one within 100 ms, not the poll interval", async () => {
    const { state, hold, inner } = leaseTable(2);
    // Two processes: two CappedClaims on one table.
    const one = new CappedClaim(inner, new MaxInWork(hold), noStatement);
    const two = new CappedClaim(inner, new MaxInWork(hold), noStatement);
    const [a, b] = await Promise.all([one.claim(2), two.claim(2)]);
    expect(a.length + b.length).toBeLessThanOrEqual(2);
    expect(state.inWork).toBe(a.length + b.length);
    for (const [claim, rows] of [
      [one, a],
      [two, b],
    ] as const) {
      const wait = claim.waitAfterShortMs();
      if (rows.length < 2) {
        expect(wait).toBeGreaterThanOrEqual(50);
        expect(wait).toBeLessThan(100);
      }
    }
    // Both gave every row back here (each recount saw the other's two): the short wait is what brings the work back.
    expect(a.length + b.length).toBe(0);
    const again = await one.claim(2);
    expect(again).toHaveLength(2);
    expect(one.waitAfterShortMs()).toBeUndefined();
  });
});
