import type { StatusReport } from "@sqlinbox/dashboard";
import { dialectFor, type Engine } from "@sqlinbox/kysely-dialects";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createQueue, dropTables, ENGINES, insertRows, uniqueName, type TestDatabase } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

const fixture = fileURLToPath(new URL("./support/fixtures/flow-limits.ts", import.meta.url));
const engineOf = { postgres: "postgres", mariadb: "mysql", sqlite: "sqlite" } as const satisfies Record<TestDatabase["name"], Engine>;

describe.each(ENGINES)("sqlinbox status shows the caps and rate limits a module declares, on %s", (_name, open) => {
  let t: TestDatabase;
  let jobs: string;
  beforeAll(async () => {
    t = await open();
    jobs = await createQueue(t, uniqueName("st_flow"), { lease: true, delay: true });
  });
  afterAll(async () => {
    await dropTables(t, jobs);
    await t.close();
  });

  test("per route: the cap and the rows in work of its group, the rate limit and the starts in its window", async () => {
    const { now } = t.types;
    await insertRows(t, jobs, [
      { payload: '{"n":1}', grp: "a", locked_until: now(30_000), attempt: 2 },
      { payload: '{"n":2}', grp: "a", locked_until: now(30_000), attempt: 2 },
      { payload: '{"n":3}', grp: "a" },
      { payload: '{"n":4}', grp: "b", locked_until: now(30_000), attempt: 2 },
    ]);
    // Four starts through route a's rate limit a second ago, as the runtime stamps them; one an hour ago (out of the window).
    const { flow } = dialectFor(engineOf[t.name]);
    const place = { name: `rate:${jobs}:a` };
    await t.db.executeQuery(flow.createSlotTable());
    await t.db.executeQuery(flow.ensureSlots(place, 10));
    await t.db.executeQuery(flow.stampSlots(place, [0, 1, 2, 3], Date.now() - 1000));
    await t.db.executeQuery(flow.stampSlots(place, [4], Date.now() - 3_600_000));

    const args = ["status", "--url", t.url, "--module", fixture];
    const env = { TEST_SOURCE_TABLE: jobs };
    process.env.TEST_SOURCE_TABLE = jobs;
    const report = await sqlinboxJson<StatusReport>(args);
    expect(report.tables[0]?.limits).toEqual([
      { route: "a", maxInWork: 3, inWork: 2, rateLimit: { max: 10, perMs: 60_000 }, startedInWindow: 4 },
      { route: "b", maxInWork: 2, inWork: 1, rateLimit: null, startedInWindow: null },
    ]);
    const human = await sqlinbox(args, { env });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain("Caps and rate limits (across every process):");
    expect(human.stdout).toMatch(/ROUTE\s+MAX IN WORK\s+IN WORK\s+RATE LIMIT\s+STARTED IN WINDOW/);
    expect(human.stdout).toMatch(/\ba\s+3\s+2\s+10 per 1m 00s\s+4\b/);
    expect(human.stdout).toMatch(/\bb\s+2\s+1\s+—\s+—/);
  });

  test("without --module nothing is declared: no limits in the report", async () => {
    const report = await sqlinboxJson<StatusReport>(["status", "--url", t.url, "--table", jobs]);
    expect(report.tables[0]).not.toHaveProperty("limits");
  });
});
