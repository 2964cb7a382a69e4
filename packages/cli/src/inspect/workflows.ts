import { dialectFor, type WorkflowRow } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery } from "kysely";
import type { OpenedDatabase } from "../connect.js";

/** One run as `sqlinbox workflows` lists it. */
export interface RunSummary {
  readonly id: string;
  readonly workflow: string;
  readonly state: string;
}

/** One step (or fan-out child, by `item`) of a run as `sqlinbox workflow <id>` shows it. */
export interface StepRow {
  readonly step: string;
  readonly item: number | null;
  readonly state: string;
  readonly job: string | null;
  readonly result: unknown;
}

async function rowsOf(opened: OpenedDatabase, query: CompiledQuery<WorkflowRow>): Promise<WorkflowRow[]> {
  return (await opened.db.executeQuery(query)).rows;
}

const parsed = (text: string | null): unknown => (text === null ? null : JSON.parse(text));

/** A page of runs, by id, of one workflow and state when given. */
export async function listRuns(
  opened: OpenedDatabase,
  filter: { readonly workflow?: string; readonly state?: string; readonly after?: string; readonly limit: number },
): Promise<RunSummary[]> {
  const rows = await rowsOf(opened, dialectFor(opened.engine).workflow.readRuns(filter));
  return rows.map((r) => ({ id: r.workflow_id, workflow: r.workflow, state: r.state }));
}

/** A run's own row and its steps' rows; `undefined` when no run has the id. */
export async function showRun(
  opened: OpenedDatabase,
  id: string,
): Promise<{ readonly run: RunSummary & { readonly input: unknown; readonly failure: unknown }; readonly steps: StepRow[] } | undefined> {
  const rows = await rowsOf(opened, dialectFor(opened.engine).workflow.readRun(id, false));
  const own = rows.find((r) => r.step === "");
  if (own === undefined) return undefined;
  const failed = rows.find((r) => r.step !== "" && r.state === "failed");
  const run = { id, workflow: own.workflow, state: own.state, input: parsed(own.data), failure: failed === undefined ? null : parsed(failed.data) };
  const steps = rows
    .filter((r) => r.step !== "")
    .map((r) => {
      const item = Number(r.item);
      return {
        step: r.step,
        item: item < 0 ? null : item,
        state: r.state,
        job: r.job_table === null ? null : `${r.job_table}#${r.job_id}`,
        result: r.state === "done" ? parsed(r.data) : null,
      };
    });
  return { run, steps };
}
