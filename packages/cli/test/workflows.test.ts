import { randomUUID } from "node:crypto";
import { dialectFor, type WorkflowRow } from "@sqlinbox/kysely-dialects";
import { sql, type CompiledQuery } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ExitCode } from "../src/exit-codes.js";
import { ENGINES, type TestDatabase, uniqueName } from "./support/databases.js";
import { sqlinbox, sqlinboxJson } from "./support/run-bin.js";

const ENGINE_OF = { postgres: "postgres", mariadb: "mysql", sqlite: "sqlite" } as const;

describe.each(ENGINES)("sqlinbox workflows and workflow on %s", (name, open) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await open();
    // The workflow table from `sqlinbox ddl --workflows`, run as a migration would.
    const ddl = await sqlinbox(["ddl", "--workflows", "--engine", ENGINE_OF[name]]);
    expect(ddl.code).toBe(0);
    for (const statement of ddl.stdout
      .replace(/^--.*$/gm, "")
      .split(";\n")
      .map((s) => s.trim())
      .filter((s) => s.length > 0))
      await sql.raw(statement).execute(t.db);
  });
  afterAll(async () => {
    await t.close();
  });

  test("lists the runs of a workflow by state, a page at a time, and shows one run's steps", async () => {
    const workflow = uniqueName("wf");
    const statements = dialectFor(ENGINE_OF[name]).workflow;
    const ids = [randomUUID(), randomUUID(), randomUUID()].sort();
    const row = (id: string, step: string, item: number, state: string, data: string | null, job: string | null = null): WorkflowRow => ({
      workflow_id: id,
      workflow,
      step,
      item,
      state,
      job_table: job === null ? null : "ship_jobs",
      job_id: job,
      data,
    });
    const [done, failed, running] = ids as [string, string, string];
    const rows = [
      row(done, "", -1, "done", '{"orderId":"o1"}'),
      row(done, "charge", -1, "done", '{"id":"c1"}', `${done}-1`),
      row(failed, "", -1, "failed", '{"orderId":"o2"}'),
      row(failed, "part", -1, "failed", '{"step":"part","item":1,"reason":"out of stock"}'),
      row(failed, "part", 0, "done", "2", `${failed}-0`),
      row(failed, "part", 1, "failed", '{"step":"part","item":1,"reason":"out of stock"}', `${failed}-1`),
      row(running, "", -1, "running", '{"orderId":"o3"}'),
    ];
    await t.db.executeQuery(statements.insert(rows, new Date()) as CompiledQuery);

    const all = await sqlinboxJson<{ runs: unknown[] }>(["workflows", "--url", t.url, "--workflow", workflow]);
    expect(all.runs).toEqual([
      { id: done, workflow, state: "done" },
      { id: failed, workflow, state: "failed" },
      { id: running, workflow, state: "running" },
    ]);
    expect((await sqlinboxJson<{ runs: unknown[] }>(["workflows", "--url", t.url, "--workflow", workflow, "--state", "failed"])).runs).toEqual([
      { id: failed, workflow, state: "failed" },
    ]);
    const page = await sqlinboxJson<{ runs: Array<{ id: string }> }>(["workflows", "--url", t.url, "--workflow", workflow, "--limit", "2", "--after", done]);
    expect(page.runs.map((r) => r.id)).toEqual([failed, running]);

    expect(await sqlinboxJson(["workflow", failed, "--url", t.url])).toEqual({
      run: { id: failed, workflow, state: "failed", input: { orderId: "o2" }, failure: { step: "part", item: 1, reason: "out of stock" } },
      steps: [
        { step: "part", item: null, state: "failed", job: null, result: null },
        { step: "part", item: 0, state: "done", job: `ship_jobs#${failed}-0`, result: 2 },
        { step: "part", item: 1, state: "failed", job: `ship_jobs#${failed}-1`, result: null },
      ],
    });
    const text = await sqlinbox(["workflow", done, "--url", t.url]);
    expect(text.code, text.stderr).toBe(ExitCode.ok);
    expect(text.stdout).toContain(`run ${done} of workflow ${workflow}: done`);
    expect(text.stdout).toMatch(/charge\s+done\s+ship_jobs#\S+\s+\{"id":"c1"\}/);
    // A cancelled run (run.cancel()) is listed by its state.
    const cancelledWorkflow = uniqueName("wf");
    const cancelled = randomUUID();
    await t.db.executeQuery(statements.insert([{ ...row(cancelled, "", -1, "cancelled", '{"orderId":"o4"}'), workflow: cancelledWorkflow }], new Date()) as CompiledQuery);
    expect((await sqlinboxJson<{ runs: unknown[] }>(["workflows", "--url", t.url, "--workflow", cancelledWorkflow, "--state", "cancelled"])).runs).toEqual([
      { id: cancelled, workflow: cancelledWorkflow, state: "cancelled" },
    ]);
    const missing = await sqlinbox(["workflow", randomUUID(), "--url", t.url]);
    expect(missing.code).toBe(ExitCode.nothingMatched);
    expect(missing.stderr).toContain("no workflow run has the id");
  });
});
