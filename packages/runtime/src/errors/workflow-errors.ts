import { SqlInboxError } from "@sqlinbox/core/internal";

/** A workflow registered twice under one name, with other steps. */
export function workflowNameTaken(workflow: string): SqlInboxError {
  return new SqlInboxError("Declaration", `workflow "${workflow}" is registered already, with other steps: give each workflow its own name`, {});
}

/** A step publishes to a route the broker does not declare. */
export function stepRouteUndeclared(workflow: string, step: string, route: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `workflow "${workflow}", step "${step}": its jobs go to route "${route}", which this broker does not declare: declare it with .route(…, "${route}") before .workflow(…)`,
    { route },
  );
}

/** A step's route goes to another table than the step describes. */
export function stepRouteOtherTable(workflow: string, step: string, route: string, routeTable: string, stepTable: string): SqlInboxError {
  return new SqlInboxError("Declaration", `workflow "${workflow}", step "${step}": route "${route}" goes to table "${routeTable}", not to the step's table "${stepTable}"`, {
    route,
  });
}

/** A step's route the app did not check when it started: its workflow was registered on the broker after. */
export function stepRouteUnchecked(route: string): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `route "${route}" of a workflow step was not checked when the app started: register every workflow on the broker (broker.workflow(…)) before the app starts`,
    { route },
  );
}

/** `startWorkflow` of a workflow the broker does not run. */
export function workflowNotRegistered(workflow: string): SqlInboxError {
  return new SqlInboxError("Declaration", `workflow "${workflow}" is not registered on this broker: register it with broker.workflow(…) before starting it`, {});
}

/** A first step's payload builder threw: the run is not started, nothing is written. */
export function workflowCannotStart(workflow: string, reason: string): SqlInboxError {
  return new SqlInboxError("Declaration", `workflow "${workflow}" cannot start, nothing was written: ${reason}`, {});
}

/** A job acked by an app whose broker does not run the workflow of its step: its next payloads cannot be built. */
export function workflowUnknownHere(workflow: string, table: string, id: unknown): SqlInboxError {
  return new SqlInboxError(
    "Declaration",
    `the job is a step of workflow "${workflow}", which this app's broker does not run: register it with broker.workflow(…) in every app that runs one of its steps; the ack was not written`,
    { table, id },
  );
}

/** A row of a run is not in the state the run's rows, read under its lock, said: something else wrote the workflow table. */
export function workflowRowsOutOfStep(runId: string, what: string, expected: string): SqlInboxError {
  return new SqlInboxError(
    "Schema",
    `workflow run ${runId}: ${what} is not ${expected} as the run's rows said; the workflow table was changed by something else, and the ack was not written`,
    {},
  );
}

/** The workflow table is missing at startup, where a subscription runs a workflow's step. */
export function workflowTableMissing(table: string): SqlInboxError {
  return new SqlInboxError(
    "Schema",
    `the workflow table ${table} does not exist: the acks of workflow steps write to it; create it with createWorkflowTable(db), workflowTableSql(engine) or sqlinbox ddl --workflows`,
    {},
  );
}

/** Why `run.finished()` gave up: the run failed, was cancelled, no run has the id, or the wait timed out. */
export type WorkflowEndReason = "failed" | "cancelled" | "notFound" | "timeout";

/** What failed a run: the step (and the fan-out child, by index), and why. */
export interface WorkflowFailure {
  readonly step: string;
  readonly item: number | null;
  readonly reason: string;
}

/**
 * `run.finished()` rejected: `reason` says why; `failure` names the step that failed. Code `WorkflowEnded`.
 *
 * @example
 * try { await run.finished({ timeoutMs: 60_000 }) }
 * catch (error) { if (error instanceof WorkflowEnded && error.reason === "failed") showFailure(error.failure) }
 */
export class WorkflowEnded extends SqlInboxError {
  readonly reason: WorkflowEndReason;
  readonly failure: WorkflowFailure | undefined;

  constructor(reason: WorkflowEndReason, workflow: string, id: string, detail: { readonly failure?: WorkflowFailure; readonly timeoutMs?: number } = {}) {
    const { failure } = detail;
    const says =
      reason === "failed"
        ? `step "${failure?.step ?? "?"}"${failure?.item === null || failure?.item === undefined ? "" : ` (item ${failure.item})`} failed: ${failure?.reason ?? ""}`
        : reason === "cancelled"
          ? "the run was cancelled"
          : reason === "notFound"
            ? "no run has this id in the workflow table"
            : `the run did not finish within ${detail.timeoutMs ?? 0} ms`;
    super("WorkflowEnded", `workflow "${workflow}", run ${id}: ${says}`, {});
    this.reason = reason;
    this.failure = failure;
  }
}
