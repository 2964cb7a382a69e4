import { randomUUID } from "node:crypto";
import type { AnyWorkflow, WorkflowResults, WorkflowSteps } from "@sqlinbox/core/internal";
import type { WorkflowRow } from "@sqlinbox/kysely-dialects";
import type { AnyKysely } from "../drivers/database.js";
import { stepRouteUnchecked, WorkflowEnded, workflowCannotStart, workflowNotRegistered, type WorkflowFailure } from "../errors.js";
import type { BrokerParts } from "../publish/broker.js";
import { cancelRow } from "@sqlinbox/database";
import type { StatementRunner } from "../claim/claim-strategy.js";
import { planStart, RUN_STEP, STEP_ROW, type PlanWrite } from "./run-plan.js";
import { jobTableOf, writePlan } from "./run-writes.js";
import { notifyReleased } from "./workflow-registry.js";

/** A step's state in its run: waiting for its dependencies, released (its jobs published), done, failed, or cancelled with its run. */
export type StepState = "waiting" | "released" | "done" | "failed" | "cancelled";

/** A run as its rows say now, each step's state by name; `done` carries every step's typed result. */
export type WorkflowRunState<W extends AnyWorkflow> =
  | { readonly state: "running"; readonly steps: Readonly<Record<keyof WorkflowSteps<W> & string, StepState>> }
  | { readonly state: "done"; readonly steps: Readonly<Record<keyof WorkflowSteps<W> & string, StepState>>; readonly results: WorkflowResults<WorkflowSteps<W>> }
  | { readonly state: "failed"; readonly steps: Readonly<Record<keyof WorkflowSteps<W> & string, StepState>>; readonly failure: WorkflowFailure }
  | { readonly state: "cancelled"; readonly steps: Readonly<Record<keyof WorkflowSteps<W> & string, StepState>> }
  | { readonly state: "gone" };

/** A workflow run: `state()` reads its rows, `finished()` waits for it to end, `cancel()` ends it. */
export class WorkflowRun<W extends AnyWorkflow> {
  readonly id: string;
  readonly workflow: W;
  readonly #parts: BrokerParts;

  /** @internal `broker.startWorkflow` and `broker.workflowRun` build runs. */
  constructor(parts: BrokerParts, workflow: W, id: string) {
    this.#parts = parts;
    this.workflow = workflow;
    this.id = id;
  }

  /** One read of the run's rows (by the workflow table's key). */
  async state(): Promise<WorkflowRunState<W>> {
    const database = await this.#parts.database();
    const rows = (await database.execute("observe", database.dialect.workflow.readRun(this.id, false))).rows as WorkflowRow[];
    return stateOf(rows) as WorkflowRunState<W>;
  }

  /**
   * Reads `state()` every `pollMs` until the run ends: resolves with every step's typed result once it
   * is done; rejects with `WorkflowEnded` when a step failed (`reason` `failed`, with the `failure`),
   * when no run has the id (`notFound`), or after `timeoutMs` (`timeout`).
   */
  async finished(options: { readonly timeoutMs?: number; readonly pollMs?: number } = {}): Promise<WorkflowResults<WorkflowSteps<W>>> {
    const { timeoutMs, pollMs = 200 } = options;
    const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    for (;;) {
      const now = await this.state();
      if (now.state === "done") return now.results;
      if (now.state === "failed") throw new WorkflowEnded("failed", this.workflow.name, this.id, { failure: now.failure });
      if (now.state === "cancelled") throw new WorkflowEnded("cancelled", this.workflow.name, this.id);
      if (now.state === "gone") throw new WorkflowEnded("notFound", this.workflow.name, this.id);
      if (Date.now() + pollMs > deadline) throw new WorkflowEnded("timeout", this.workflow.name, this.id, { timeoutMs });
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  /**
   * Cancels the run, if it is running or failed: in one transaction under the run's lock, every step
   * (and fan-out child) not done nor failed is cancelled, and the run too; then each job of it still
   * in its queue is cancelled as `broker.cancel` does (removed, or its `ctx.signal` aborted where it
   * runs). An ack or a dead letter of a job of a cancelled run releases and fails nothing. Resolves
   * to `true`, or to `false` when the run had ended already (done or cancelled) or no run has the id.
   */
  async cancel(): Promise<boolean> {
    const database = await this.#parts.database();
    const clock = await this.#parts.clock();
    const statements = database.dialect.workflow;
    const jobs = await database.transaction("publish", async (trx) => {
      const on: StatementRunner = (q) => database.execute("publish", q, trx);
      await on(statements.lockRun(this.id));
      const rows = (await on(statements.readRun(this.id, true))).rows as WorkflowRow[];
      const own = rows.find((r) => r.step === RUN_STEP);
      if (own === undefined || (own.state !== "running" && own.state !== "failed")) return undefined;
      const writes: PlanWrite[] = [];
      const jobs: Array<{ table: string; id: string }> = [];
      for (const row of rows) {
        if (row.state === "done" || row.state === "failed" || row.state === "cancelled") continue;
        writes.push({ write: "change", step: row.step, item: Number(row.item), from: row.state, to: { state: "cancelled" } });
        if (row.step !== RUN_STEP && row.state === "released" && row.job_table !== null && row.job_id !== null) jobs.push({ table: row.job_table, id: row.job_id });
      }
      if (own.state === "failed") writes.push({ write: "change", step: RUN_STEP, item: STEP_ROW, from: "failed", to: { state: "cancelled" } });
      const writer = { dialect: database.dialect, now: clock.now(), target: (route: string) => stepTarget(route) };
      await writePlan(on, writer, this.id, this.workflow.name, writes);
      return jobs;
    });
    if (jobs === undefined) return false;
    // Committed: no ack of the run releases anything now; the jobs still queued go, the ones in work are signalled.
    const tables = new Map(this.workflow.steps.map((s) => [jobTableOf(s.spec.description), s.spec.description]));
    for (const job of jobs) {
      const description = tables.get(job.table);
      if (description !== undefined) await cancelRow(database.controlPlace, description, description.table, job.id, clock.now());
    }
    return true;
  }
}

function stepTarget(route: string): never {
  throw stepRouteUnchecked(route);
}

/** A run's state from its rows: each step's state, and the results (each step's, a fan-out's as its list) once done. */
function stateOf(rows: readonly WorkflowRow[]): WorkflowRunState<AnyWorkflow> {
  const own = rows.find((r) => r.step === RUN_STEP);
  if (own === undefined) return { state: "gone" };
  const stepRows = rows.filter((r) => r.step !== RUN_STEP && Number(r.item) === STEP_ROW);
  const steps = Object.fromEntries(stepRows.map((r) => [r.step, r.state as StepState]));
  if (own.state === "failed") {
    // The failed step's rows carry what failed it (a fan-out's row and its child's alike).
    const failed = rows.find((r) => r.step !== RUN_STEP && r.state === "failed");
    return { state: "failed", steps, failure: JSON.parse(failed?.data ?? '{"step":"","item":null,"reason":""}') as WorkflowFailure };
  }
  if (own.state === "cancelled") return { state: "cancelled", steps };
  if (own.state === "done") {
    const results = Object.fromEntries(stepRows.map((r) => [r.step, r.data === null ? null : JSON.parse(r.data)]));
    return { state: "done", steps, results };
  }
  return { state: "running", steps };
}

/**
 * Starts a run of `workflow`: its rows (the run, every step waiting) and the jobs of the steps that
 * wait for nothing, in one transaction: `via`'s (the caller's, so the run starts only if it commits)
 * or one of its own. Refused when a first step's payload builder throws.
 */
export async function startRun<W extends AnyWorkflow>(parts: BrokerParts, workflow: W, input: unknown, via: AnyKysely | undefined, listening = false): Promise<WorkflowRun<W>> {
  if (parts.workflows.get(workflow.name) !== workflow) {
    throw workflowNotRegistered(workflow.name);
  }
  // The plan first: a first payload that cannot be built is refused before anything connects.
  const writes = planStart(workflow, input);
  const failed = writes.find((w) => w.write === "change" && w.step !== RUN_STEP && w.to.state === "failed");
  if (failed !== undefined && failed.write === "change") {
    throw workflowCannotStart(workflow.name, (JSON.parse(failed.to.data ?? "{}") as WorkflowFailure).reason);
  }
  const database = await parts.database();
  const clock = await parts.clock();
  const targets = await parts.workflows.targets(parts.routes);
  const id = randomUUID();
  const writer = {
    dialect: database.dialect,
    now: clock.now(),
    target: (route: string) => {
      const target = targets.get(route);
      if (target === undefined) throw stepRouteUnchecked(route);
      return target;
    },
  };
  const routes = writes.flatMap((w) => (w.write === "publish" ? [w.route] : []));
  const write = async (on: StatementRunner) => {
    await writePlan(on, writer, id, workflow.name, writes);
    // As a publish does with listenNotify(): other processes hear of the first jobs when the run commits.
    if (parts.connection.listening || listening) await notifyReleased(on, database.dialect, targets, routes);
  };
  if (via !== undefined) await write((q) => database.execute("publish", q, via));
  else await database.transaction("publish", (trx) => write((q) => database.execute("publish", q, trx)));
  if (via === undefined) {
    // Committed: this process's subscriptions of the first steps' tables look now, not at their next poll.
    for (const w of writes) {
      if (w.write !== "publish") continue;
      const description = targets.get(w.route)?.description;
      if (description !== undefined) parts.publisher.wake(description.table, description.group === undefined ? undefined : w.route);
    }
  }
  return new WorkflowRun(parts, workflow, id);
}
