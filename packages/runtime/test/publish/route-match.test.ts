/** Route matching without a database: exact beats prefix, the longest prefix wins, otherwise nothing. */
import { describe, expect, test } from "vitest";
import { chunkRows } from "../../src/publish/publish-rows.js";
import { isPrefixRoute, matchRoute } from "../../src/publish/route-match.js";

const routes = new Map([
  ["reports.*", "all reports"],
  ["reports.daily.*", "daily reports"],
  ["reports.weekly", "weekly (exact)"],
  ["mail", "mail (exact)"],
]);

describe("matchRoute", () => {
  test.each([
    ["reports.weekly", "weekly (exact)"],
    ["reports.monthly", "all reports"],
    ["reports.daily.eu", "daily reports"],
    ["reports.daily", "all reports"],
    ["mail", "mail (exact)"],
    ["mail.welcome", undefined],
    ["report", undefined],
    ["reports.", "all reports"],
  ])("%s goes to %s", (name, expected) => {
    expect(matchRoute(routes, name)).toBe(expected);
  });

  test("an exact route named like a prefix route's name beats it", () => {
    expect(
      matchRoute(
        new Map([
          ["a.*", 1],
          ["a.b", 2],
        ]),
        "a.b",
      ),
    ).toBe(2);
  });

  test("only a name ending in * is a prefix route", () => {
    expect(isPrefixRoute("reports.*")).toBe(true);
    expect(isPrefixRoute("*")).toBe(true);
    expect(isPrefixRoute("reports")).toBe(false);
  });
});

describe("chunkRows", () => {
  test("each chunk carries at most the engine's parameters", () => {
    const rows = Array.from({ length: 10 }, (_, n) => ({ payload: n, grp: "g", headers: "{}" }));
    const chunks = chunkRows(rows, 9);
    expect(chunks.map((c) => c.length)).toEqual([3, 3, 3, 1]);
    expect(chunks.flat()).toEqual(rows);
  });

  test("the Postgres limit takes 65535 one-column rows per insert, SQLite's 32766", () => {
    const rows = Array.from({ length: 70_000 }, (_, n) => ({ payload: n }));
    expect(chunkRows(rows, 65_535).map((c) => c.length)).toEqual([65_535, 4_465]);
    expect(chunkRows(rows, 32_766).map((c) => c.length)).toEqual([32_766, 32_766, 4_468]);
  });

  test("no rows, no chunk", () => {
    expect(chunkRows([], 100)).toEqual([]);
  });
});
