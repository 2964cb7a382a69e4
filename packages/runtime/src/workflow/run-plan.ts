import type { StepPublish } from "@sqlinbox/core";
import type { AnyWorkflow, InboxDescription, StepDescription } from "@sqlinbox/core/internal";
import type { WorkflowChange, WorkflowRow } from "@sqlinbox/kysely-dialects";

/**
 * What happens to a workflow run when it starts, when one of its jobs is acked and when one fails:
 * pure functions from the run's rows (read under the run's lock) to the writes that follow, in
 * order. They call the steps' payload builders; everything else is the caller's I/O.
 */

/** The run's own row is `("", -1)`; a step's row is `(name, -1)`; a fan-out's children are `(name, index)`. */
export const RUN_STEP = "";
export const STEP_ROW = -1;

/** One write of a plan, applied in order in the transaction that read the run. */
export type PlanWrite =
  | { readonly write: "insert"; readonly rows: readonly Omit<WorkflowRow, "workflow_id" | "workflow">[] }
  | { readonly write: "change"; readonly step: string; readonly item: number; readonly from: string; readonly to: WorkflowChange }
  /** Publishes a step's job (`item` -1: the step's row, waiting, becomes released with the job) or a fan-out child's (its row is inserted, released). */
  | { readonly write: "publish"; readonly step: string; readonly item: number; readonly route: string; readonly payload: unknown; readonly options?: StepPublish };

/** A run as its rows say, kept current while a plan is made. */
interface RunModel {
  state: string;
  readonly input: unknown;
  readonly steps: Map<string, StepModel>;
}
interface StepModel {
  state: string;
  data: string | null;
  /** A fan-out's children, by index. */
  children: Array<{ state: string; data: string | null }>;
}

/** The rows of a run (as `readRun` returns them) as a model; `undefined` without the run's own row. */
function modelOf(rows: readonly WorkflowRow[]): RunModel | undefined {
  const own = rows.find((r) => r.step === RUN_STEP);
  if (own === undefined) return undefined;
  const steps = new Map<string, StepModel>();
  for (const row of rows) {
    if (row.step === RUN_STEP) continue;
    const step = steps.get(row.step) ?? { state: "waiting", data: null, children: [] };
    steps.set(row.step, step);
    const item = Number(row.item);
    if (item === STEP_ROW) {
      step.state = row.state;
      step.data = row.data;
    } else step.children[item] = { state: row.state, data: row.data };
  }
  return { state: own.state, input: parse(own.data), steps };
}

function parse(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/** Plans a run's start: its rows (the run running, every step waiting), then the release of the steps that wait for nothing. */
export function planStart(workflow: AnyWorkflow, input: unknown): PlanWrite[] {
  const rows = [
    { step: RUN_STEP, item: STEP_ROW, state: "running", job_table: null, job_id: null, data: JSON.stringify(input) ?? null },
    ...workflow.steps.map((s) => ({ step: s.name, item: STEP_ROW, state: "waiting", job_table: null, job_id: null, data: null })),
  ];
  const model: RunModel = { state: "running", input, steps: new Map(workflow.steps.map((s) => [s.name, { state: "waiting", data: null, children: [] }])) };
  const writes: PlanWrite[] = [{ write: "insert", rows }];
  release(workflow, model, writes);
  return writes;
}

/**
 * Plans the ack of a step's job (`item` -1) or of a fan-out child's (`item` its index), with the
 * result it wrote (JSON text, `null` without a result column): the row is done; a fan-out whose
 * last child this was is done, its result the children's results in item order; then every step
 * whose dependencies are now all done is released (its payload built), and a run whose steps are all
 * done is done. A run that failed releases nothing more, unless this ack resumes it.
 *
 * Resume: the job of a failed row (dead-lettered, then moved back into its queue) that is acked
 * makes the row done (a child's fan-out released again); a failed run whose rows are then none
 * failed runs again, and its waiting steps are released as if the step had never failed.
 */
export function planDone(workflow: AnyWorkflow, rows: readonly WorkflowRow[], step: string, item: number, result: string | null): PlanWrite[] {
  const model = modelOf(rows);
  const at = model?.steps.get(step);
  if (model === undefined || at === undefined || model.state === "cancelled") return [];
  const writes: PlanWrite[] = [];
  if (item === STEP_ROW) {
    if (at.state !== "released" && at.state !== "failed") return [];
    done(model, step, result, writes);
  } else {
    const child = at.children[item];
    if (child === undefined || (child.state !== "released" && child.state !== "failed")) return [];
    writes.push({ write: "change", step, item, from: child.state, to: { state: "done", data: result } });
    child.state = "done";
    child.data = result;
    if (at.state === "failed" && at.children.every((c) => c.state !== "failed")) {
      at.state = "released";
      writes.push({ write: "change", step, item: STEP_ROW, from: "failed", to: { state: "released", data: null } });
    }
    if (at.state === "released" && at.children.every((c) => c.state === "done")) {
      done(model, step, JSON.stringify(at.children.map((c) => parse(c.data))), writes);
    }
  }
  if (model.state === "failed" && [...model.steps.values()].every((s) => s.state !== "failed")) {
    model.state = "running";
    writes.push({ write: "change", step: RUN_STEP, item: STEP_ROW, from: "failed", to: { state: "running" } });
  }
  release(workflow, model, writes);
  return writes;
}

/**
 * Plans the failure of a step's job or a child's (dead-lettered, or dropped): the row, its step and
 * the run are failed, with `reason`; the steps that wait for it stay waiting, never released.
 */
export function planFailed(rows: readonly WorkflowRow[], step: string, item: number, reason: string): PlanWrite[] {
  const model = modelOf(rows);
  const at = model?.steps.get(step);
  if (model === undefined || at === undefined || model.state === "cancelled") return [];
  const row = item === STEP_ROW ? at : at.children[item];
  if (row?.state !== "released") return [];
  const data = JSON.stringify({ step, item: item === STEP_ROW ? null : item, reason });
  const writes: PlanWrite[] = [{ write: "change", step, item, from: "released", to: { state: "failed", data } }];
  if (item !== STEP_ROW && at.state === "released") writes.push({ write: "change", step, item: STEP_ROW, from: "released", to: { state: "failed", data } });
  // The run's row keeps its input: the failure is on the failed step's rows.
  if (model.state === "running") writes.push({ write: "change", step: RUN_STEP, item: STEP_ROW, from: "running", to: { state: "failed" } });
  return writes;
}

function done(model: RunModel, step: string, data: string | null, writes: PlanWrite[]): void {
  const at = model.steps.get(step);
  if (at === undefined) return;
  writes.push({ write: "change", step, item: STEP_ROW, from: at.state, to: { state: "done", data } });
  at.state = "done";
  at.data = data;
}

/**
 * Releases every waiting step whose dependencies are all done, in declaration order, until none is
 * left (an empty fan-out is done at once, which may release more); then a run whose steps are all done is done.
 */
function release(workflow: AnyWorkflow, model: RunModel, writes: PlanWrite[]): void {
  if (model.state !== "running") return;
  for (let changed = true; changed && model.state === "running"; ) {
    changed = false;
    for (const step of workflow.steps) {
      const at = model.steps.get(step.name);
      if (at === undefined || at.state !== "waiting" || !step.after.every((d) => model.steps.get(d)?.state === "done")) continue;
      changed = true;
      releaseStep(step, at, model, writes);
      if (model.state !== "running") return;
    }
  }
  if ([...model.steps.values()].every((s) => s.state === "done")) {
    model.state = "done";
    writes.push({ write: "change", step: RUN_STEP, item: STEP_ROW, from: "running", to: { state: "done" } });
  }
}

function releaseStep(step: StepDescription, at: StepModel, model: RunModel, writes: PlanWrite[]): void {
  const results: Record<string, unknown> = {};
  for (const dep of step.after) results[dep] = parse(model.steps.get(dep)?.data ?? null);
  const build = step.build as (...args: unknown[]) => unknown;
  // Its options: the step's value, or its function called with the builder's arguments, checked against the table.
  const optionsOf = (...args: unknown[]): StepPublish | undefined => {
    const publish = step.publish;
    if (publish === undefined) return undefined;
    let options: StepPublish;
    try {
      options = typeof publish === "function" ? (publish as (...a: unknown[]) => StepPublish)(...args) : publish;
    } catch (error) {
      throw new StepBuildError(`the publish options of step "${step.name}" threw: ${error instanceof Error ? error.message : String(error)}`);
    }
    const refused = refusedOption(step.spec.description, options);
    if (refused !== undefined) throw new StepBuildError(`the publish options of step "${step.name}" ${refused}`);
    return options;
  };
  const publishWrite = (item: number, payload: unknown, options: StepPublish | undefined): PlanWrite =>
    options === undefined
      ? { write: "publish", step: step.name, item, route: step.route, payload }
      : { write: "publish", step: step.name, item, route: step.route, payload, options };
  try {
    if (step.over === undefined) {
      const payload = build(model.input, results);
      const options = optionsOf(model.input, results);
      at.state = "released";
      writes.push(publishWrite(STEP_ROW, payload, options));
      return;
    }
    const items = results[step.over];
    if (!Array.isArray(items)) throw new TypeError(`step "${step.name}" fans out over the result of "${step.over}", which is not an array`);
    const payloads = items.map((item, index) => build(model.input, item, results, index));
    const options = items.map((item, index) => optionsOf(model.input, item, results, index));
    if (payloads.length === 0) {
      // Nothing to fan out over: done at once, its result an empty list.
      at.state = "done";
      at.data = "[]";
      writes.push({ write: "change", step: step.name, item: STEP_ROW, from: "waiting", to: { state: "done", data: "[]" } });
      return;
    }
    at.state = "released";
    at.children = payloads.map(() => ({ state: "released", data: null }));
    writes.push({ write: "change", step: step.name, item: STEP_ROW, from: "waiting", to: { state: "released" } });
    for (const [index, payload] of payloads.entries()) writes.push(publishWrite(index, payload, options[index]));
  } catch (error) {
    // A payload builder (or publish options) that throws fails the run, naming the step: retrying the ack would build it again.
    const reason = error instanceof StepBuildError ? error.message : `the payload builder of step "${step.name}" threw: ${error instanceof Error ? error.message : String(error)}`;
    const data = JSON.stringify({ step: step.name, item: null, reason });
    at.state = "failed";
    writes.push({ write: "change", step: step.name, item: STEP_ROW, from: "waiting", to: { state: "failed", data } });
    model.state = "failed";
    writes.push({ write: "change", step: RUN_STEP, item: STEP_ROW, from: "running", to: { state: "failed" } });
  }
}

/** A step's publish options that failed: the run fails with this message, as with a builder that throws. */
class StepBuildError extends Error {}

/** Why the step's table cannot take these options (what a publish would refuse), or `undefined` when it can. */
function refusedOption(spec: InboxDescription, options: StepPublish): string | undefined {
  if (typeof options !== "object" || options === null) return "returned no options object";
  const { delay, priority, columns, headers } = options;
  if (delay !== undefined && (typeof delay !== "number" || !Number.isFinite(delay) || delay < 0)) return `have delay ${String(delay)}: a number of ms, 0 or more`;
  if (delay !== undefined && spec.retryAfter === undefined && spec.lease === undefined) return `have a delay, and ${spec.table} has no retryAfter or lease column to hold the time`;
  if (priority !== undefined && (typeof priority !== "number" || !Number.isInteger(priority))) return `have priority ${String(priority)}: a whole number`;
  if (priority !== undefined && spec.priority === undefined) return `have a priority, and ${spec.table} has no priority column`;
  if (headers !== undefined && spec.headers === undefined) return `have headers, and ${spec.table} has no headers column`;
  for (const key of Object.keys(columns ?? {})) {
    const writable = spec.columns.some((c) => (c.role === "data" || c.role === "orderKey") && (c.key === key || c.name === key));
    if (!writable) return `name column "${key}", which is not a data column or the order key of ${spec.table}`;
  }
  return undefined;
}
