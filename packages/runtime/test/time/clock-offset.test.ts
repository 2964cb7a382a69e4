/** The host's offset from the database's clock, from timed readings: pure, without a database. */
import { describe, expect, test } from "vitest";
import { describeSkew, offsetOf, tolerableSkewMs, type ClockSample } from "@sqlinbox/database";

describe("offsetOf: database minus host, from the reading with the shortest round trip", () => {
  const cases: ReadonlyArray<readonly [string, readonly ClockSample[], { offsetMs: number; roundTripMs: number }]> = [
    ["same clocks, instant answer", [{ sentAt: 1_000, serverAt: 1_000, receivedAt: 1_000 }], { offsetMs: 0, roundTripMs: 0 }],
    ["the server read its clock at the midpoint of a 10 ms trip", [{ sentAt: 1_000, serverAt: 1_005, receivedAt: 1_010 }], { offsetMs: 0, roundTripMs: 10 }],
    ["host 60 s ahead", [{ sentAt: 61_000, serverAt: 1_002, receivedAt: 61_004 }], { offsetMs: -60_000, roundTripMs: 4 }],
    ["host 60 s behind", [{ sentAt: 1_000, serverAt: 61_002, receivedAt: 1_004 }], { offsetMs: 60_000, roundTripMs: 4 }],
    [
      "a slow reading loses to a quick one, wherever it comes",
      [
        { sentAt: 0, serverAt: 5_400, receivedAt: 800 }, // 800 ms trip: the midpoint guess could be 400 ms off
        { sentAt: 1_000, serverAt: 6_002, receivedAt: 1_004 },
        { sentAt: 2_000, serverAt: 7_050, receivedAt: 2_100 },
      ],
      { offsetMs: 5_000, roundTripMs: 4 },
    ],
    ["a host clock stepped back mid-reading counts as no trip at all", [{ sentAt: 1_010, serverAt: 2_000, receivedAt: 1_000 }], { offsetMs: 990, roundTripMs: 0 }],
  ];
  test.each(cases)("%s", (_name, samples, expected) => {
    const { offsetMs, roundTripMs } = offsetOf(samples);
    expect({ offsetMs, roundTripMs }).toEqual(expected);
  });

  test("the readings it reports are the chosen sample's: the server's time and the host's at the midpoint", () => {
    expect(offsetOf([{ sentAt: 61_000, serverAt: 1_002, receivedAt: 61_004 }])).toEqual({ offsetMs: -60_000, roundTripMs: 4, serverAt: 1_002, hostAt: 61_002 });
  });

  test("no sample is a programming error", () => {
    expect(() => offsetOf([])).toThrow(RangeError);
  });
});

describe("how the skew is told and tolerated", () => {
  test.each([
    [-60_000, "60.0 s ahead of"],
    [60_000, "60.0 s behind"],
    [-1_234, "1.2 s ahead of"],
    [0, "0.0 s behind"],
  ])("offset %d ms: the host is %s the database", (offsetMs, text) => {
    expect(describeSkew(offsetMs)).toBe(text);
  });

  test("leaseClock host tolerates a quarter of the lease", () => {
    expect(tolerableSkewMs(30_000)).toBe(7_500);
    expect(tolerableSkewMs(2_000)).toBe(500);
  });
});
