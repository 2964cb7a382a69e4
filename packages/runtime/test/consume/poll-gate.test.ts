/**
 * The poll gate's due times, on a paused clock: one timer to the soonest known due time, a sooner
 * time re-arms it, a later one waits behind it, a fire wakes once for every time due by then, and
 * nothing fires after the gate closed.
 */
import { describe, expect, test } from "vitest";
import { DueTimes, MAX_DUE_TIMES } from "../../src/consume/due-times.js";
import { PollGate } from "../../src/consume/poll-gate.js";
import { PausedClock } from "../../src/testing/paused-clock.js";

describe("DueTimes", () => {
  test("keeps times sorted and once each, and forgets those due", () => {
    const due = new DueTimes();
    for (const at of [500, 100, 300, 100, 200]) due.add(at);
    expect(due.soonest).toBe(100);
    expect(due.size).toBe(4);
    expect(due.dropThrough(99)).toBe(false);
    expect(due.dropThrough(250)).toBe(true);
    expect(due.soonest).toBe(300);
    expect(due.size).toBe(2);
  });

  test("past its bound it keeps the soonest times", () => {
    const due = new DueTimes();
    for (let i = MAX_DUE_TIMES + 10; i > 0; i--) due.add(i);
    expect(due.size).toBe(MAX_DUE_TIMES);
    expect(due.soonest).toBe(1);
    due.add(MAX_DUE_TIMES + 500);
    expect(due.size).toBe(MAX_DUE_TIMES);
    expect(due.dropThrough(MAX_DUE_TIMES)).toBe(true);
    expect(due.size).toBe(0);
  });
});

describe("PollGate due times", () => {
  function gate() {
    const clock = new PausedClock(new Date(1_000_000));
    const woken: number[] = [];
    const g = new PollGate(clock, 10_000, () => woken.push(clock.now().getTime()));
    g.start();
    return { clock, g, woken, t0: 1_000_000 };
  }

  test("one timer, to the soonest due time; a later time waits behind it", () => {
    const { clock, g, woken, t0 } = gate();
    expect(g.dueAt(t0 + 500)).toBe(true);
    expect(g.dueAt(t0 + 800)).toBe(true);
    expect(clock.pending).toBe(1);
    expect(g.nextDue).toBe(t0 + 500);
    clock.fireDue(t0 + 500);
    expect(woken).toEqual([t0 + 500]);
    // The next due time has its timer now.
    expect(g.nextDue).toBe(t0 + 800);
    clock.fireDue(t0 + 800);
    expect(woken).toEqual([t0 + 500, t0 + 800]);
    expect(clock.pending).toBe(0);
  });

  test("a sooner time re-arms the timer", () => {
    const { clock, g, woken, t0 } = gate();
    g.dueAt(t0 + 900);
    g.dueAt(t0 + 300);
    expect(clock.pending).toBe(1);
    expect(g.nextDue).toBe(t0 + 300);
    clock.fireDue(t0 + 300);
    expect(woken).toEqual([t0 + 300]);
    clock.fireDue(t0 + 900);
    expect(woken).toEqual([t0 + 300, t0 + 900]);
  });

  test("times due together wake once; a time already past is the caller's to wake now", () => {
    const { clock, g, woken, t0 } = gate();
    g.dueAt(t0 + 100);
    g.dueAt(t0 + 100);
    g.dueAt(t0 + 101);
    clock.fireDue(t0 + 200);
    // The timer to +100 fired at +200 (the clock jumped): both times were due, one wake.
    expect(woken).toEqual([t0 + 200]);
    expect(clock.pending).toBe(0);
    expect(g.dueAt(t0 + 200)).toBe(false);
    expect(clock.pending).toBe(0);
  });

  test("the due timer fires during a poll wait, and a closed gate neither arms nor fires", () => {
    const { clock, g, woken, t0 } = gate();
    let polled = 0;
    g.wait(() => polled++);
    expect(g.open).toBe(false);
    g.dueAt(t0 + 500);
    clock.fireDue(t0 + 500);
    expect(woken).toEqual([t0 + 500]); // long before the 10 s poll
    expect(polled).toBe(0);
    g.dueAt(t0 + 700);
    g.close();
    expect(clock.pending).toBe(0);
    expect(g.dueAt(t0 + 900)).toBe(false);
    clock.fireDue(t0 + 20_000);
    expect(woken).toEqual([t0 + 500]);
    expect(polled).toBe(0);
  });
});
