import { compiledFixture } from "./support/compiled-fixture.js";
import { fileURLToPath } from "node:url";
import type { PeekedRow, StatusReport } from "@sqlinbox/dashboard";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { createQueue, ENGINES, insertRows, uniqueName, type TestDatabase, useTestDatabase } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

// Compiled once: the bin runs on these modules many times (a `.ts` module loads tsx in each run).
const fixture = (name: string) => compiledFixture(fileURLToPath(new URL(`./support/fixtures/${name}`, import.meta.url)));

describe.each(ENGINES)("sqlinbox dead letters on %s", (_name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });
  const rows = async (table: string) => (await sql<Record<string, unknown>>`select * from ${sql.table(table)} order by id`.execute(t.db)).rows;

  /** A lease table and its dead-letter table, named through the fixture module's environment. */
  async function tablePair() {
    const source = await createQueue(t, uniqueName("dl_src"), { lease: true });
    const destination = await createQueue(t, uniqueName("dl_dst"), { lastError: true, attemptsName: "attempts" });
    tables.push(source, destination);
    process.env.TEST_SOURCE_TABLE = source;
    process.env.TEST_DEAD_TABLE = destination;
    return { source, destination, base: ["--url", t.url, "--module", fixture("table-dead-letters.ts")] };
  }

  test("a dead-letter table: status counts it, peek shows last_error and attempts, retry moves one row in one transaction", async () => {
    const { source, destination, base } = await tablePair();
    await insertRows(t, source, [{ payload: '{"report":1}', grp: "reports" }]);
    await insertRows(t, destination, [
      { payload: '{"report":7,"customer":"acme"}', grp: "reports", attempts: 5, last_error: "TypeError: pages is undefined" },
      { payload: '{"report":8}', grp: "reports", attempts: 5, last_error: "timeout after 30s" },
    ]);

    const status = (await sqlinboxJson<StatusReport>(["status", ...base])).tables;
    expect(status.map((s) => s.table)).toEqual([source]); // the destination is not listed as a queue of its own
    expect(status[0]!.groups.map((g) => [g.group, g.ready, g.dead])).toEqual([["reports", 1, 2]]);
    expect(status[0]!.deadLetters).toEqual([{ kind: "table", table: destination }]);

    const peeked = await sqlinboxJson<PeekedRow[]>(["peek", ...base, "--state", "dead"]);
    expect(peeked.map((r) => [r.id, r.columns.attempts, r.columns.last_error, r.payload])).toEqual([
      ["1", 5, "TypeError: pages is undefined", { report: 7, customer: "acme" }],
      ["2", 5, "timeout after 30s", { report: 8 }],
    ]);
    const human = await sqlinbox(["peek", ...base, "--state", "dead"]);
    expect(human.stdout).toMatch(/id\s+attempts\s+grp\s+created_at\s+last_error\s+payload/);
    expect(human.stdout).toContain('{"report":7,"customer":"acme"}');

    const retried = await sqlinbox(["retry", "1", ...base]);
    expect([retried.code, retried.stdout]).toEqual([0, "moved 1 dead letter back\n"]);
    const back = await rows(source);
    expect(back.map((r) => [r.payload, r.grp, Number(r.attempt), r.locked_until])).toEqual([
      ['{"report":1}', "reports", 1, null],
      ['{"report":7,"customer":"acme"}', "reports", 1, null],
    ]);
    expect((await rows(destination)).map((r) => Number(r.id))).toEqual([2]);

    const again = await sqlinbox(["retry", "1", ...base]);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain("no dead letter with id 1");
  });

  test("peek's default (--state all) shows a dead-letter table's rows after the table's own; a list cut by --limit says how many more", async () => {
    const { destination, base } = await tablePair();
    await insertRows(
      t,
      destination,
      Array.from({ length: 5 }, (_, i) => ({ payload: `{"report":${i + 1}}`, grp: "reports", attempts: 5, last_error: `boom ${i + 1}` })),
    );
    // The source table is empty: its dead letters are what there is to see.
    const all = await sqlinboxJson<PeekedRow[]>(["peek", ...base]);
    expect(all.map((r) => [r.id, r.deadLetterTable, r.columns.last_error, r.payload])).toEqual(
      Array.from({ length: 5 }, (_, i) => [String(i + 1), destination, `boom ${i + 1}`, { report: i + 1 }]),
    );
    const human = await sqlinbox(["peek", ...base]);
    expect([human.code, human.stderr]).toEqual([0, ""]);
    expect(human.stdout).toMatch(new RegExp(`^dead letters in ${destination}:\\nid\\s+attempts\\s+grp\\s+created_at\\s+last_error\\s+payload\\n`));
    expect(human.stdout.trim().split("\n")).toHaveLength(3 + 5); // the line naming the table, the header and its rule, the rows

    // Cut by --limit: said on stderr, with the number of dead letters not shown.
    const cut = await sqlinbox(["peek", ...base, "--state", "dead", "--limit", "3"]);
    expect([cut.code, cut.stderr]).toEqual([0, "sqlinbox: showing the first 3; 2 more dead letters (raise --limit to see them)\n"]);
    expect(cut.stdout.trim().split("\n")).toHaveLength(2 + 3);
    const cutAll = await sqlinbox(["peek", ...base, "--limit", "4"]);
    expect([cutAll.code, cutAll.stderr]).toEqual([0, "sqlinbox: showing the first 4; more rows match (raise --limit to see them)\n"]);
    expect((await sqlinbox(["peek", ...base, "--limit", "5"])).stderr).toBe("");
  });

  test("retry --all moves 2,500 dead letters in chunks of 1,000 with a progress bar, losing and duplicating none", async () => {
    const { source, destination, base } = await tablePair();
    await insertRows(
      t,
      destination,
      Array.from({ length: 2500 }, (_, i) => ({ payload: `{"n":${i}}`, grp: "reports", attempts: 5, last_error: "boom" })),
    );
    const result = await sqlinbox(["retry", "--all", "--chunk", "1000", "--progress", ...base]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("moved 2500 dead letters back\n");
    const lines = result.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/^retrying \[░+\]\s+0% 0\/2500$/);
    expect(lines).toContainEqual(expect.stringMatching(/^retrying \[█+░+\]\s+40% 1000\/2500$/));
    expect(lines.at(-1)).toMatch(/^retrying \[█+\] 100% 2500\/2500$/);
    const moved = await rows(source);
    expect(moved.length).toBe(2500);
    expect(new Set(moved.map((r) => r.payload)).size).toBe(2500);
    expect(await rows(destination)).toEqual([]);
    expect((await sqlinbox(["retry", "--all", ...base])).code).toBe(3);
  });

  test("a dead group of the same table (declared in the module): retry sets the group back and the attempt to its default", async () => {
    const table = await createQueue(t, uniqueName("dl_grp"), { customer: true });
    tables.push(table);
    process.env.TEST_SOURCE_TABLE = table;
    const base = ["--url", t.url, "--module", fixture("group-dead-letters.ts")];
    await insertRows(t, table, [
      { payload: '{"to":"a@example.com"}', grp: "mail", customer_id: "acme" },
      { payload: '{"to":"b@example.com"}', grp: "mail.dead", customer_id: "beta", attempt: 6 },
      { payload: '{"to":"c@example.com"}', grp: "mail.dead", customer_id: "beta", attempt: 6 },
    ]);
    const status = (await sqlinboxJson<StatusReport>(["status", ...base])).tables[0]!;
    expect(status.form).toBe("advisory");
    expect(status.groups.map((g) => [g.group, g.ready, g.dead])).toEqual([["mail", 1, 2]]);
    // The retried row is back at the column's default (1): no attempt made yet.
    expect(status.groups[0]!.attempts).toEqual([{ attempt: 0, rows: 1 }]);

    const result = await sqlinbox(["retry", "--all", ...base]);
    expect([result.code, result.stdout]).toEqual([0, "moved 2 dead letters back\n"]);
    expect((await rows(table)).map((r) => [r.grp, Number(r.attempt)])).toEqual([
      ["mail", 1],
      ["mail", 1],
      ["mail", 1],
    ]);
  });

  test("purge asks first: no answer deletes nothing (exit 4), y deletes, --yes does not ask", async () => {
    const table = await createQueue(t, uniqueName("dl_purge"), { done: true });
    tables.push(table);
    const base = ["--url", t.url, "--table", table, "--dead-letter-group", "mail=mail.dead"];
    await insertRows(t, table, [
      { payload: "{}", grp: "mail" },
      { payload: "{}", grp: "mail.dead" },
      { payload: "{}", grp: "mail.dead" },
      { payload: "{}", grp: "mail", processed_at: t.types.now(-1000) },
    ]);
    const declined = await sqlinbox(["purge", "--state", "dead", ...base]);
    expect(declined.code).toBe(4);
    expect(declined.stderr).toContain(`Delete 2 dead letters from ${table}? [y/N]`);
    expect((await rows(table)).length).toBe(4);

    const confirmed = await sqlinbox(["purge", "--state", "dead", ...base], { input: "y\n" });
    expect([confirmed.code, confirmed.stdout]).toEqual([0, "deleted 2 rows\n"]);
    expect((await rows(table)).map((r) => r.grp)).toEqual(["mail", "mail"]);

    const scripted = await sqlinbox(["purge", "--state", "done", "--yes", "--json", ...base]);
    expect([scripted.code, JSON.parse(scripted.stdout)]).toEqual([0, { deleted: 1 }]);
    expect((await rows(table)).length).toBe(1);
    const none = await sqlinbox(["purge", "--state", "done", "--yes", ...base]);
    expect([none.code, none.stdout, none.stderr]).toEqual([3, "", "sqlinbox: no rows matched: nothing deleted\n"]);

    // One row: the prompt says "1 dead letter".
    await insertRows(t, table, [{ payload: "{}", grp: "mail.dead" }]);
    const one = await sqlinbox(["purge", "--state", "dead", ...base]);
    expect(one.stderr).toContain(`Delete 1 dead letter from ${table}? [y/N]`);
  });
});
