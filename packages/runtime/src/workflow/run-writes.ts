import type { InboxDescription, SqlInboxError } from "@sqlinbox/core/internal";
import { workflowRowsOutOfStep } from "../errors.js";
import type { EngineDialect, WorkflowRow } from "@sqlinbox/kysely-dialects";
import type { StatementRunner } from "../claim/claim-strategy.js";
import type { PayloadStorage } from "../declare/payload.js";
import { insertedIds } from "../publish/keyed-insert.js";
import { publishedRows } from "../publish/publish-rows.js";
import { STEP_ROW, type PlanWrite } from "./run-plan.js";

/** Where a step's jobs go: its route's table and how that table stores a payload. */
export interface StepTarget {
  readonly description: InboxDescription;
  readonly storage: PayloadStorage;
}

/** What a plan is written with: the engine's statements, the time, and each route's target. */
export interface RunWriter {
  readonly dialect: EngineDialect;
  readonly now: Date;
  target(route: string): StepTarget;
}

/** The table a job is in, as the workflow table records it: `schema.table`, or the table. */
export function jobTableOf(description: InboxDescription): string {
  return description.schema === undefined ? description.table : `${description.schema}.${description.table}`;
}

/**
 * Writes a plan of run `workflowId` in order, on `on` (the transaction that read the run, or that starts it):
 * a change that finds its row in another state than it expects fails the whole transaction (the
 * run's lock makes that a bug, never a race); a publish inserts the job, then records it on its step.
 */
export async function writePlan(on: StatementRunner, writer: RunWriter, workflowId: string, workflow: string, writes: readonly PlanWrite[]): Promise<void> {
  const statements = writer.dialect.workflow;
  for (const w of writes) {
    switch (w.write) {
      case "insert":
        await on(statements.insert(w.rows.map((r) => ({ ...r, workflow_id: workflowId, workflow })) as WorkflowRow[], writer.now));
        break;
      case "change": {
        const result = await on(statements.change(workflowId, w.step, w.item, w.from, w.to, writer.now));
        if (Number(result.numAffectedRows ?? 0n) !== 1) throw outOfStep(workflowId, w.step, w.item, w.from);
        break;
      }
      case "publish": {
        const { description, storage } = writer.target(w.route);
        const options = w.options;
        const rows = publishedRows(
          description,
          w.route,
          [w.payload],
          storage,
          options === undefined
            ? {}
            : {
                priority: options.priority,
                headers: options.headers,
                columns: options.columns,
                // A delay runs from the release, on the broker's clock (the database's time, as claims compare).
                runAt: options.delay === undefined ? undefined : new Date(writer.now.getTime() + options.delay),
              },
        );
        const inserted = await on(writer.dialect.publish.insert(description, rows));
        const job = { job_table: jobTableOf(description), job_id: String(insertedIds(description, rows, inserted)[0]) };
        if (w.item === STEP_ROW) {
          const result = await on(statements.change(workflowId, w.step, STEP_ROW, "waiting", { state: "released", ...job }, writer.now));
          if (Number(result.numAffectedRows ?? 0n) !== 1) throw outOfStep(workflowId, w.step, w.item, "waiting");
        } else {
          await on(statements.insert([{ workflow_id: workflowId, workflow, step: w.step, item: w.item, state: "released", data: null, ...job }], writer.now));
        }
        break;
      }
      default:
        return unknownWrite(w);
    }
  }
}

function outOfStep(workflowId: string, step: string, item: number, from: string): SqlInboxError {
  const what = step === "" ? "the run's own row" : item === STEP_ROW ? `step "${step}"` : `step "${step}", item ${item}`;
  return workflowRowsOutOfStep(workflowId, what, from);
}

function unknownWrite(write: never): never {
  throw new Error(`no workflow write ${JSON.stringify(write)}`);
}
