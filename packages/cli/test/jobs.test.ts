import { column, InboxSpec, payloadOf, workflow } from "@sqlinbox/core";
import { createWorkflowTable, SqlBroker } from "@sqlinbox/runtime";
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { ENGINES, insertRows, type TestDatabase, useTestDatabase } from "./support/databases.js";
import { holdKey, holdRows, jobsTables, type JobsTables } from "./support/jobs-tables.js";
import { sqlinbox } from "./support/run-bin.js";

interface Page {
  rows: { id: string; state: string; columns: Record<string, unknown>; payload?: unknown; deadLetterTable?: string }[];
  next: string | null;
}
interface Shown {
  id: string;
  state: string;
  attempt?: unknown;
  runAt?: string | null;
  leaseUntil?: string | null;
  processedAt?: string | null;
  holder?: string | null;
  lastError?: unknown;
  payload?: string;
  payloadBytes?: number;
}

const ids = (page: Page) => page.rows.map((r) => Number(r.id));

/** Rows 1–6 waiting (keys k1–k6, customers c1 c2 alternating), 7 scheduled, 8 done, 9 held by a claim (lease form: a live lease); 60 dead letters. */
async function fill(t: TestDatabase, q: JobsTables, form: "lease" | "rowLock"): Promise<void> {
  const waiting = Array.from({ length: 6 }, (_, i) => ({ payload: JSON.stringify({ n: i + 1 }), job_key: `k${i + 1}`, customer_id: i % 2 === 0 ? "c1" : "c2" }));
  await insertRows(t, q.table, [
    ...waiting,
    { payload: '{"n":7}', job_key: "k7", customer_id: "c1", retry_after: t.types.now(3_600_000), last_error: "Error: upstream 503", attempt: 2 },
    { payload: '{"n":8}', job_key: "k8", customer_id: "c2", processed_at: t.types.now(-60_000) },
    { payload: '{"n":9}', job_key: "k9", customer_id: "c2", ...(form === "lease" ? { locked_until: t.types.now(60_000) } : {}) },
  ]);
  await insertRows(
    t,
    q.dead,
    Array.from({ length: 60 }, (_, i) => ({ payload: JSON.stringify({ dead: i + 1 }), attempts: 5, last_error: `boom ${i + 1}` })),
  );
}

describe.each(ENGINES)("sqlinbox jobs list and show on %s", (name, open) => {
  let t!: TestDatabase;
  const { tables } = useTestDatabase(open, (opened) => {
    t = opened;
  });

  test("lease form: each state with --key and --where filters, two pages by --after, 60 dead letters past 50, all, and show", async () => {
    const q = await jobsTables(t, "lease", true);
    tables.push(q.table, q.dead);
    const filledFrom = Date.now();
    await fill(t, q, "lease");
    const list = (args: string[], code?: number) => q.json<Page>(["jobs", "list", q.table, ...args], code);
    const [first, c1, keyed, done, running, deadFirst] = await Promise.all([
      list(["--state", "waiting", "--limit", "4"]),
      list(["--state", "waiting", "--where", "customer_id=c1"]),
      list(["--state", "scheduled", "--key", "k7"]),
      list(["--state", "done"]),
      list(["--state", "running"]),
      list(["--state", "deadLettered", "--limit", "50"]),
    ]);
    expect([ids(first), first.next]).toEqual([[1, 2, 3, 4], "4"]);
    expect(first.rows[0]).toMatchObject({ id: "1", state: "waiting", payload: { n: 1 }, columns: { job_key: "k1", customer_id: "c1" } });
    expect([ids(c1), c1.next]).toEqual([[1, 3, 5], null]);
    expect(keyed.rows.map((r) => [r.id, r.state, r.columns.last_error])).toEqual([["7", "scheduled", "Error: upstream 503"]]);
    expect(ids(done)).toEqual([8]);
    expect(running.rows.map((r) => [r.id, r.state])).toEqual([["9", "running"]]);
    expect([deadFirst.rows.length, deadFirst.next, deadFirst.rows[0]?.deadLetterTable, deadFirst.rows[0]?.payload]).toEqual([50, deadFirst.rows[49]?.id, q.dead, { dead: 1 }]);

    const [second, deadSecond, all, otherKey] = await Promise.all([
      list(["--state", "waiting", "--limit", "4", "--after", first.next!]),
      list(["--state", "deadLettered", "--limit", "50", "--after", deadFirst.next!]),
      list(["--state", "all"]),
      list(["--state", "waiting", "--key", "k7"], ExitCode.nothingMatched),
    ]);
    expect([ids(second), second.next]).toEqual([[5, 6], null]);
    expect([deadSecond.rows.length, deadSecond.next, deadSecond.rows.at(-1)?.payload]).toEqual([10, null, { dead: 60 }]);
    expect(all.rows.map((r) => `${r.id}:${r.state}`)).toEqual(["1:waiting", "2:waiting", "3:waiting", "4:waiting", "5:waiting", "6:waiting", "7:scheduled", "8:done", "9:running"]);
    expect(otherKey.rows).toEqual([]);

    const [shown, text, leased] = await Promise.all([
      q.json<Shown>(["jobs", "show", q.table, "7"]),
      q.run(["jobs", "show", q.table, "7"]),
      q.json<Shown>(["jobs", "show", q.table, "9"]),
    ]);
    expect(shown).toMatchObject({
      id: "7",
      state: "scheduled",
      attempt: 2,
      lastError: "Error: upstream 503",
      leaseUntil: null,
      processedAt: null,
      holder: null,
      payload: '{\n  "n": 7\n}',
    });
    expect(Math.abs(Date.parse(shown.runAt!) - Date.now() - 3_600_000)).toBeLessThan(60_000);
    expect(text.stdout).toMatch(/^job 7 in \S+: scheduled\nattempt: 2\nrun at: \S+Z\nlease until: —\nprocessed at: —\nlast error: Error: upstream 503\n/);
    expect(text.stdout).toContain('payload:\n{\n  "n": 7\n}\n');
    expect(text.stdout).toContain("\nheld by: —\n");
    expect(leased.state).toBe("running");
    // The lease holds it: its column is the worker's token, and it runs out at leaseUntil.
    expect(leased.holder).toBe(`a worker's lease (locked_until holds its token), until ${leased.leaseUntil}`);
    // Written as the fill's time plus a minute: within the time the test has taken since (a few seconds; more on a loaded machine).
    expect(Date.parse(leased.leaseUntil!)).toBeGreaterThanOrEqual(filledFrom + 60_000 - 5_000);
    expect(Date.parse(leased.leaseUntil!)).toBeLessThanOrEqual(Date.now() + 60_000 + 5_000);
  });

  test("show cuts a payload past 64 KiB and says so; a missing id and a state the table cannot hold are errors naming them", async () => {
    const q = await jobsTables(t, "lease", false);
    tables.push(q.table, q.dead);
    // 70 000 characters of JSON text, stored as text (MariaDB's text holds 65 535 bytes: a mediumtext there).
    if (name === "mariadb") await sql.raw(`alter table ${q.table} modify payload mediumtext`).execute(t.db);
    const big = JSON.stringify({ blob: "x".repeat(70_000) });
    await insertRows(t, q.table, [{ payload: big, job_key: "big" }]);
    const [shown, text, missing, noDone] = await Promise.all([
      q.json<Shown>(["jobs", "show", q.table, "1"]),
      q.run(["jobs", "show", q.table, "1"]),
      q.run(["jobs", "show", q.table, "42"]),
      q.run(["jobs", "list", q.table, "--state", "done"]),
    ]);
    const pretty = JSON.stringify(JSON.parse(big), null, 2);
    expect([shown.payload?.length, shown.payloadBytes]).toEqual([64 * 1024, pretty.length]);
    expect(text.stdout).toContain(`(payload cut: showing the first 64 KiB of ${pretty.length} bytes)`);
    expect([missing.code, missing.stdout, missing.stderr]).toEqual([ExitCode.nothingMatched, "", `sqlinbox: no job 42 in ${q.table} (nor among its dead letters)\n`]);
    expect([noDone.code, noDone.stdout, noDone.stderr]).toEqual([
      ExitCode.usage,
      "",
      `sqlinbox: table "${q.table}" has no processedAt column, so no row is ever in state done (handled rows are deleted)\n`,
    ]);
  });

  test("row-lock form: a row a claim's transaction holds lists as running, not waiting; the text table and show say so", async () => {
    const q = await jobsTables(t, "rowLock", true);
    tables.push(q.table, q.dead);
    await fill(t, q, "rowLock");
    // SQLite has no row locks: a claim there holds no row another connection could see, so row 9 waits.
    const release = name === "sqlite" ? async () => undefined : await holdRows(t.db, `select id from ${q.table} where id = 9 for update skip locked`);
    try {
      const list = (args: string[], code?: number) => q.json<Page>(["jobs", "list", q.table, ...args], code);
      // One at a time: a list finds held rows with a FOR UPDATE SKIP LOCKED probe, and another list's probe holds rows for its moment.
      const waiting = await list(["--state", "waiting"]);
      const running = await list(["--state", "running"], name === "sqlite" ? ExitCode.nothingMatched : 0);
      const all = await list(["--state", "all"]);
      const shown = await q.json<Shown>(["jobs", "show", q.table, "9"]);
      const text = await q.run(["jobs", "list", q.table, "--state", "all", "--limit", "8"]);
      const held = name === "sqlite" ? "waiting" : "running";
      expect(ids(waiting)).toEqual(name === "sqlite" ? [1, 2, 3, 4, 5, 6, 9] : [1, 2, 3, 4, 5, 6]);
      expect(ids(running)).toEqual(name === "sqlite" ? [] : [9]);
      expect(all.rows.map((r) => `${r.id}:${r.state}`)).toEqual([
        "1:waiting",
        "2:waiting",
        "3:waiting",
        "4:waiting",
        "5:waiting",
        "6:waiting",
        "7:scheduled",
        "8:done",
        `9:${held}`,
      ]);
      expect(shown.state).toBe(held);
      expect(shown.holder).toBe(name === "sqlite" ? null : "a session holds its row lock (a claim's open transaction)");
      expect(text.code).toBe(0);
      expect(text.stdout).toMatch(/^id\s+state\s+attempt\s+job_key\s+retry_after\s+last_error\s+customer_id\s+processed_at\s+payload\n/);
      expect(text.stdout).toMatch(/\n 7\s+scheduled\s+2\s+k7\s+\S+Z\s+Error: upstream 503\s+c1\s+\{"n":7\}\n/);
      expect(text.stdout.endsWith("next page: --after 8\n")).toBe(true);
    } finally {
      await release();
    }
  });

  test("advisory form: show names the key a session holds; on SQLite, where keys live in the app's process, it says it cannot be seen", async () => {
    const q = await jobsTables(t, "advisory", false);
    tables.push(q.table, q.dead);
    await insertRows(t, q.table, [
      { payload: '{"n":1}', customer_id: "c1" },
      { payload: '{"n":2}', customer_id: "c2" },
    ]);
    if (name === "sqlite") {
      const [shown, text] = await Promise.all([q.json<Shown>(["jobs", "show", q.table, "2"]), q.run(["jobs", "show", q.table, "2"])]);
      expect(shown.state).toBe("waiting");
      expect("holder" in shown).toBe(false);
      expect(text.stdout).toContain("\nheld by: cannot be seen from outside (advisory keys on SQLite live in the application's process)\n");
      return;
    }
    const release = await holdKey(t, `${q.table}:job-c2`);
    try {
      const [free, held, text] = await Promise.all([
        q.json<Shown>(["jobs", "show", q.table, "1"]),
        q.json<Shown>(["jobs", "show", q.table, "2"]),
        q.run(["jobs", "show", q.table, "2"]),
      ]);
      expect([free.state, free.holder]).toEqual(["waiting", null]);
      expect([held.state, held.holder]).toEqual(["running", `a session holds its advisory key "${q.table}:job-c2"`]);
      expect(text.stdout).toContain(`\nheld by: a session holds its advisory key "${q.table}:job-c2"\n`);
    } finally {
      await release();
    }
  });

  test("a table that cannot hold the state, or a filter on a column it lacks, is a usage error naming it", async () => {
    const q = await jobsTables(t, "lease", false);
    tables.push(q.table, q.dead);
    const [bare, where] = await Promise.all([
      sqlinbox(["jobs", "list", q.dead, "--state", "scheduled", "--url", t.url]),
      q.run(["jobs", "list", q.table, "--state", "waiting", "--where", "color=red"]),
    ]);
    expect([bare.code, bare.stderr]).toEqual([ExitCode.usage, `sqlinbox: table "${q.dead}" has no retryAfter column, so no row is ever in state scheduled\n`]);
    expect([where.code, where.stderr]).toEqual([
      ExitCode.usage,
      `sqlinbox: --where names "color", which is not a column of table "${q.table}" (a payload is searched with --search)\n`,
    ]);
  });

  test("--search finds text in payloads a window of 10,000 rows a page, wildcards as themselves; show tells the route's policy", async () => {
    const q = await jobsTables(t, "lease", true, { TEST_JOBS_POLICY: "1" });
    tables.push(q.table, q.dead);
    // Ids 1–10 030 waiting; those whose id ends in 007 hold "Needle" (7, 1007, …, 10007); then two
    // codes whose search text has a LIKE wildcard in it, one scheduled needle, one done, one leased.
    const waiting = Array.from({ length: 10_030 }, (_, i) => ({ payload: JSON.stringify({ n: i + 1, tag: (i + 1) % 1000 === 7 ? `Needle-${i + 1}` : "hay" }) }));
    await insertRows(t, q.table, waiting);
    await insertRows(t, q.table, [{ payload: '{"code":"50%_off"}' }, { payload: '{"code":"5000 off"}' }]);
    await insertRows(t, q.table, [
      { payload: '{"tag":"needle-later"}', retry_after: t.types.now(3_600_000) },
      { payload: '{"tag":"needle-done"}', processed_at: t.types.now(-60_000) },
      { payload: '{"tag":"needle-held"}', locked_until: t.types.now(60_000) },
    ]);
    await insertRows(t, q.dead, [
      { payload: '{"dead":"needle-dead"}', attempts: 5 },
      { payload: '{"dead":"other"}', attempts: 5 },
    ]);
    const list = (args: string[], code?: number) => q.json<Page>(["jobs", "list", q.table, ...args], code);
    const needles = (to: number) => Array.from({ length: 11 }, (_, i) => i * 1000 + 7).filter((id) => id <= to);

    const [first, limited, wild, dead] = await Promise.all([
      list(["--state", "waiting", "--search", "NEEDLE"]),
      list(["--state", "waiting", "--search", "needle", "--limit", "3"]),
      list(["--state", "waiting", "--search", "0%_o", "--after", "10000"]),
      list(["--state", "deadLettered", "--search", "needle"]),
    ]);
    // The first page read the window of ids 1–10 000 and found 10 there: it goes on from the window's end.
    expect([ids(first), first.next]).toEqual([needles(10_000), "10000"]);
    expect(first.rows[0]?.payload).toEqual({ n: 7, tag: "Needle-7" });
    expect([ids(limited), limited.next]).toEqual([[7, 1007, 2007], "2007"]);
    // "%" and "_" match themselves: "5000 off" would match them as wildcards.
    expect([ids(wild), wild.next]).toEqual([[10_031], null]);
    expect([dead.rows.map((r) => r.payload), dead.next]).toEqual([[{ dead: "needle-dead" }], null]);

    const [second, all, none] = await Promise.all([
      list(["--state", "waiting", "--search", "needle", "--after", first.next!]),
      list(["--state", "all", "--search", "needle", "--after", "10000"]),
      q.run(["jobs", "list", q.table, "--state", "waiting", "--search", "absent", "--after", "10000"]),
    ]);
    expect([ids(second), second.next]).toEqual([[10_007], null]);
    // Each row set is searched: the scheduled, done and leased needles beside the waiting one.
    expect(all.rows.map((r) => `${r.id}:${r.state}`)).toEqual(["10007:waiting", "10033:scheduled", "10034:done", "10035:running"]);
    expect([none.code, none.stdout, none.stderr]).toEqual([ExitCode.nothingMatched, "", `sqlinbox: no waiting jobs whose payload holds "absent" in ${q.table} after id 10000\n`]);

    const [shown, text] = await Promise.all([q.json<Shown & { policies: unknown[] }>(["jobs", "show", q.table, "7"]), q.run(["jobs", "show", q.table, "7"])]);
    expect(shown.policies).toEqual([
      {
        route: "jobs",
        maxAttempts: 5,
        deadLetter: `table ${q.dead}`,
        timeout: { ms: 30_000, graceMs: 2_000 },
        onError: "default backoff",
        workers: 4,
        batch: 1,
        pollIntervalMs: expect.any(Number),
        maxInWork: 8,
      },
    ]);
    expect(text.stdout).toContain(
      `\nroute jobs: max attempts 5, dead letters table ${q.dead}, timeout 30000 ms + 2000 ms grace, on a throw default backoff, 4 workers × batch 1, at most 8 in work\n`,
    );

    // A job that is a workflow's step: show names its run and every step of it.
    await createWorkflowTable(t.db);
    const Steps = InboxSpec.table(q.table, column("id").generated())
      .lease(column("locked_until"))
      .processedAt(column("processed_at"))
      .payload(column("payload"), payloadOf<{ tag: string }>());
    const Flow = workflow(`${q.table}_flow`, payloadOf<{ tag: string }>())
      .step("first", Steps, (input) => input)
      .step("second", Steps, { after: ["first"] }, (input) => input);
    const broker = SqlBroker.fromUrl(t.url).route(Steps, "first").route(Steps, "second").workflow(Flow);
    const run = await broker.startWorkflow(Flow, { tag: "flow-step" });
    await broker.close();
    const [stepId] = ids(await list(["--state", "waiting", "--search", "flow-step", "--after", "10035"]));
    const [step, stepText] = await Promise.all([q.json<{ workflow: unknown }>(["jobs", "show", q.table, String(stepId)]), q.run(["jobs", "show", q.table, String(stepId)])]);
    expect(step.workflow).toEqual({
      id: run.id,
      name: `${q.table}_flow`,
      state: "running",
      step: "first",
      item: null,
      steps: [
        { step: "first", item: null, state: "released", jobTable: q.table, jobId: String(stepId) },
        { step: "second", item: null, state: "waiting", jobTable: null, jobId: null },
      ],
    });
    expect(stepText.stdout).toContain(`\nworkflow run ${q.table}_flow ${run.id}: running; this job is step first\n  first: released (${q.table} #${stepId})\n  second: waiting\n`);
    expect(shown).toMatchObject({ workflow: null });
  }, 120_000);
});
