import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { createQueue, ENGINES, insertRows, uniqueName, type TestDatabase, useTestDatabase } from "./support/databases.js";
import { sqlinbox } from "./support/run-bin.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

describe.each(ENGINES)("sqlinbox purge --older-than on %s", (_name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });
  const remaining = async (table: string) => (await sql<{ payload: string }>`select payload from ${sql.table(table)} order by id`.execute(t.db)).rows.map((r) => r.payload);

  test("deletes only the rows handled longer ago than the duration (done by default), after asking; unhandled rows stay", async () => {
    const table = await createQueue(t, uniqueName("older"), { done: true });
    tables.push(table);
    const base = ["--url", t.url, "--table", table];
    await insertRows(t, table, [
      { payload: "eight days", grp: "a", processed_at: t.types.now(-8 * DAY) },
      { payload: "six days", grp: "a", processed_at: t.types.now(-6 * DAY) },
      { payload: "an hour", grp: "a", processed_at: t.types.now(-HOUR) },
      { payload: "waiting", grp: "a" },
      { payload: "ten days, group b", grp: "b", processed_at: t.types.now(-10 * DAY) },
    ]);
    const asked = await sqlinbox(["purge", "--older-than", "7d", ...base]);
    expect([asked.code, asked.stderr]).toEqual([4, expect.stringContaining(`Delete 2 done rows handled more than 7d ago from ${table}? [y/N]`)]);
    expect(await remaining(table)).toHaveLength(5);

    const group = await sqlinbox(["purge", "--older-than", "7d", "--group", "b", "--yes", ...base]);
    expect([group.code, group.stdout]).toEqual([0, "deleted 1 row\n"]);
    const week = await sqlinbox(["purge", "--older-than", "1w", "--state", "done", "--yes", ...base]);
    expect([week.code, week.stdout]).toEqual([0, "deleted 1 row\n"]);
    expect(await remaining(table)).toEqual(["six days", "an hour", "waiting"]);
    const day = await sqlinbox(["purge", "--older-than", "1d", "--yes", ...base]);
    expect([day.code, day.stdout]).toEqual([0, "deleted 1 row\n"]);
    expect(await remaining(table)).toEqual(["an hour", "waiting"]);
    const none = await sqlinbox(["purge", "--older-than", "2h", "--yes", ...base]);
    expect([none.code, none.stderr]).toEqual([3, "sqlinbox: no rows matched: nothing deleted\n"]);
  });

  test("a duration it cannot read, a state other than done, and a table without processedAt are refused", async () => {
    const table = await createQueue(t, uniqueName("older_bad"), { lease: true });
    tables.push(table);
    const base = ["--url", t.url, "--table", table];
    const bad = await sqlinbox(["purge", "--older-than", "7 days", "--yes", ...base]);
    expect([bad.code, bad.stderr]).toEqual([1, 'sqlinbox: --older-than takes a duration such as 7d, 24h, 30m or 90s (s, m, h, d, w), got "7 days"\n']);
    const state = await sqlinbox(["purge", "--older-than", "7d", "--state", "ready", "--yes", ...base]);
    expect([state.code, state.stderr]).toEqual([
      1,
      "sqlinbox: --older-than selects handled rows by when they were handled: use it with --state done (its default), not --state ready\n",
    ]);
    const neither = await sqlinbox(["purge", "--yes", ...base]);
    expect([neither.code, neither.stderr]).toEqual([1, "sqlinbox: say which rows: --state <state>, or --older-than <duration> for handled rows\n"]);
    const noDone = await sqlinbox(["purge", "--older-than", "7d", "--yes", ...base]);
    expect(noDone.code).not.toBe(0);
    expect(noDone.stderr).toContain("need a processedAt column");
  });
});
