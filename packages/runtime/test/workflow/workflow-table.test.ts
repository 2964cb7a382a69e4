/**
 * The workflow table made by `createWorkflowTable` on every engine: made twice without harm, keyed
 * by (run, step, item), a job one step's at most, and a change that lands only on a row in the state it expects.
 */
import { randomUUID } from "node:crypto";
import { dialectFor, type WorkflowRow } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import type { AnyKysely } from "../../src/drivers/database.js";
import { createWorkflowTable } from "../../src/index.js";
import { engines } from "../support/engines.js";

describe.each(engines)("the workflow table on $name", (engine) => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  });

  test("created twice; rows keyed by run, step and item; a job belongs to one step; changes are conditional", async () => {
    const db: AnyKysely = await engine.connect(engine.url());
    closers.push(() => db.destroy());
    await createWorkflowTable(db);
    await createWorkflowTable(db);
    const statements = dialectFor(engine.engine).workflow;
    const run = (q: CompiledQuery) => db.executeQuery(q);
    const id = randomUUID();
    const now = new Date();
    const row = (step: string, item: number, state: string, job: string | null): WorkflowRow => ({
      workflow_id: id,
      step,
      item,
      workflow: "order",
      state,
      job_table: job === null ? null : "charge_jobs",
      job_id: job,
      data: null,
    });
    await run(statements.insert([row("", -1, "running", null), row("charge", -1, "released", `${id}-1`), row("ship", -1, "waiting", null)], now));
    const found = await run(statements.findByJob("charge_jobs", `${id}-1`));
    expect(found.rows).toEqual([{ workflow_id: id, step: "charge", item: -1, state: "released" }]);
    // The same (run, step, item) twice, or one job under two steps: refused by the table.
    await expect(run(statements.insert([row("ship", -1, "waiting", null)], now))).rejects.toThrow();
    await expect(run(statements.insert([row("pack", -1, "released", `${id}-1`)], now))).rejects.toThrow();
    const done = await run(statements.change(id, "charge", -1, "released", { state: "done", data: '{"id":"c1"}' }, now));
    expect(Number(done.numAffectedRows)).toBe(1);
    const again = await run(statements.change(id, "charge", -1, "released", { state: "done", data: '{"id":"c2"}' }, now));
    expect(Number(again.numAffectedRows)).toBe(0);
    expect((await run(statements.lockRun(id))).rows).toEqual([{ state: "running" }]);
    const rows = (await run(statements.readRun(id, true))).rows as WorkflowRow[];
    expect(rows.map((r) => [r.step, Number(r.item), r.state, r.data])).toEqual([
      ["", -1, "running", null],
      ["charge", -1, "done", '{"id":"c1"}'],
      ["ship", -1, "waiting", null],
    ]);
  });
});
