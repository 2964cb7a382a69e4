import { describe, expect, test } from "vitest";
import { createdAtColumn, inferDescription } from "../src/infer-table.js";
import { ProgressBar } from "../src/render/progress-bar.js";
import { duration, textTable } from "../src/render/text-table.js";

const found = (...names: string[]) => names.map((name) => ({ name, dataType: "text", precision: null, nullable: true }));

describe("roles read from column names (--table)", () => {
  test.each([
    [["id", "attempt", "locked_until", "payload", "grp"], "lease", { attempt: "attempt", lease: "locked_until", payload: "payload", group: "grp" }],
    [
      ["id", "attempts", "body", "run_after", "done_at", "priority", "queue_name"],
      "rowLock",
      { attempt: "attempts", payload: "body", retryAfter: "run_after", processedAt: "done_at", priority: "priority", group: "queue_name" },
    ],
    [["ID", "Lease_Until", "payload"], "lease", { lease: "Lease_Until", payload: "payload" }],
  ] as const)("%j is the %s form", (names, form, roles) => {
    const spec = inferDescription("jobs", found(...names));
    expect(spec.form).toBe(form);
    const actual = Object.fromEntries(
      (["attempt", "lease", "payload", "retryAfter", "processedAt", "priority", "group"] as const).flatMap((r) => (spec[r] === undefined ? [] : [[r, spec[r]!.name]])),
    );
    expect(actual).toEqual(roles);
    expect(spec.id.generated).toBe(true);
  });

  test("the first conventional name wins; the rest are data; an advisory key selects the advisory form", () => {
    const spec = inferDescription("jobs", found("id", "attempt", "attempts", "customer_id"), "c-{customer_id}");
    expect(spec.form).toBe("advisory");
    expect(spec.attempt?.name).toBe("attempt");
    expect(spec.columns.filter((c) => c.role === "data").map((c) => c.name)).toEqual(["attempts", "customer_id"]);
  });

  test("a table without an id column is refused", () => {
    expect(() => inferDescription("jobs", found("job_id", "payload"))).toThrow(/no id column/);
  });

  test("created-at column", () => {
    expect(createdAtColumn(found("id", "enqueued_at"))).toBe("enqueued_at");
    expect(createdAtColumn(found("id"))).toBeUndefined();
  });
});

describe("human output", () => {
  test("text tables align numbers right and text left", () => {
    expect(
      textTable(
        ["GROUP", "READY"],
        [
          ["a", "4"],
          ["bbbb", "1200"],
        ],
      ),
    ).toBe(["GROUP  READY", "─────  ─────", "a          4", "bbbb    1200"].join("\n"));
  });
  test.each([
    [null, "—"],
    [850, "850ms"],
    [42_000, "42s"],
    [185_000, "3m 05s"],
    [7_800_000, "2h 10m"],
    [273_600_000, "3d 4h"],
  ] as const)("duration(%j) = %s", (ms, text) => {
    expect(duration(ms)).toBe(text);
  });
  test("the progress bar prints one line per tenth when stderr is not a terminal", () => {
    const lines: string[] = [];
    const bar = new ProgressBar({ write: (t: string) => lines.push(t) }, "retrying");
    for (let done = 0; done <= 100; done += 5) bar.update(done, 100);
    expect(lines.length).toBe(11);
    expect(lines.at(-1)).toBe(`retrying [${"█".repeat(30)}] 100% 100/100\n`);
  });
  test("on a terminal it redraws one line in place", () => {
    const out: string[] = [];
    const bar = new ProgressBar({ write: (t: string) => out.push(t), isTTY: true }, "retrying");
    bar.update(1, 2);
    bar.update(2, 2);
    expect(out).toEqual([`\rretrying [${"█".repeat(15)}${"░".repeat(15)}]  50% 1/2`, `\rretrying [${"█".repeat(30)}] 100% 2/2`, "\n"]);
  });
});
