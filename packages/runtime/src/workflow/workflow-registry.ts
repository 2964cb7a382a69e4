import type { AnyWorkflow, InboxDescription } from "@sqlinbox/core/internal";
import { stepRouteOtherTable, stepRouteUnchecked, stepRouteUndeclared, workflowNameTaken, workflowUnknownHere } from "../errors.js";
import type { EngineDialect, WorkflowRow } from "@sqlinbox/kysely-dialects";
import { channelOf } from "@sqlinbox/kysely-dialects/internal";
import type { SettlementFollowUp, StatementRunner } from "../claim/claim-strategy.js";
import { rowEndOf, type Settlement } from "../claim/settlement.js";
import type { Clock } from "../clock.js";
import type { Database } from "../drivers/database.js";
import type { RouteTable } from "../publish/route-table.js";
import { planDone, planFailed, RUN_STEP } from "./run-plan.js";
import { jobTableOf, writePlan, type StepTarget } from "./run-writes.js";

/** The workflows a broker runs (`broker.workflow(…)`), by name, each step's route checked against the broker's routes. */
export class WorkflowRegistry {
  readonly #byName = new Map<string, AnyWorkflow>();

  /** Registers `workflow`; each step's route must be declared and go to the step's table. */
  add(workflow: AnyWorkflow, routes: RouteTable): void {
    const known = this.#byName.get(workflow.name);
    if (known !== undefined && known !== workflow) {
      throw workflowNameTaken(workflow.name);
    }
    for (const step of workflow.steps) {
      const spec = routes.route(step.route);
      if (spec === undefined) throw stepRouteUndeclared(workflow.name, step.name, step.route);
      const [routeTable, stepTable] = [jobTableOf(spec.description), jobTableOf(step.spec.description)];
      if (routeTable !== stepTable) throw stepRouteOtherTable(workflow.name, step.name, step.route, routeTable, stepTable);
    }
    this.#byName.set(workflow.name, workflow);
  }

  get(name: string): AnyWorkflow | undefined {
    return this.#byName.get(name);
  }

  /** Every registered workflow. */
  all(): readonly AnyWorkflow[] {
    return [...this.#byName.values()];
  }

  /** Whether a step of a registered workflow publishes to `table` (the subscription of that table then carries the follow-up). */
  hasStepsOn(table: InboxDescription): boolean {
    const key = jobTableOf(table);
    return [...this.#byName.values()].some((w) => w.steps.some((s) => jobTableOf(s.spec.description) === key));
  }

  /** Where each step route's jobs go, every table checked against the database once (`RouteTable.table`). */
  async targets(routes: RouteTable): Promise<Map<string, StepTarget>> {
    const targets = new Map<string, StepTarget>();
    for (const workflow of this.#byName.values()) {
      for (const step of workflow.steps) {
        const description = step.spec.description;
        targets.set(step.route, { description, storage: (await routes.table(description)).storage });
      }
    }
    return targets;
  }
}

/**
 * A workflow step's settlement, in the settlement's own transaction: the job is looked up in the
 * workflow table by its table and id (a job of no run: nothing more); the run's row is locked, so
 * two acks of one run write one after the other; then the plan of the ack (done, and the steps now
 * due released) or of the failure (a dead letter, a drop) is written. One ack releases a step at
 * most once: the second of two acks that finish its last dependencies reads the first one's rows.
 */
export class WorkflowFollowUp implements SettlementFollowUp {
  readonly #registry: WorkflowRegistry;
  readonly #database: Database;
  readonly #clock: Clock;
  readonly #table: string;
  readonly #targets: ReadonlyMap<string, StepTarget>;
  /** Wakes this process's subscriptions of a table (of a group's route), and says whether other processes are told too (`NOTIFY`). */
  readonly #announce: ReleaseAnnounce;
  /** The routes each settlement in flight released, by the row's id: woken once it commits. */
  readonly #released = new Map<unknown, readonly string[]>();

  constructor(registry: WorkflowRegistry, database: Database, clock: Clock, table: InboxDescription, targets: ReadonlyMap<string, StepTarget>, announce: ReleaseAnnounce) {
    this.#announce = announce;
    this.#registry = registry;
    this.#database = database;
    this.#clock = clock;
    this.#table = jobTableOf(table);
    this.#targets = targets;
  }

  wants(settlement: Settlement): boolean {
    return rowEndOf(settlement) !== undefined;
  }

  async run(on: StatementRunner, id: unknown, settlement: Settlement): Promise<void> {
    const statements = this.#database.dialect.workflow;
    // A settlement that runs again (a retried transaction) forgets what an earlier try released.
    this.#released.delete(id);
    const found = (await on(statements.findByJob(this.#table, String(id)))).rows[0];
    if (found === undefined) return;
    const runId = found.workflow_id;
    await on(statements.lockRun(runId));
    const rows = (await on(statements.readRun(runId, true))).rows as WorkflowRow[];
    const name = rows.find((r) => r.step === RUN_STEP)?.workflow ?? "";
    const workflow = this.#registry.get(name);
    if (workflow === undefined) throw workflowUnknownHere(name, this.#table, id);
    const end = rowEndOf(settlement);
    if (end === undefined) return;
    const item = Number(found.item);
    const writes = end.done ? planDone(workflow, rows, found.step, item, end.result ?? null) : planFailed(rows, found.step, item, end.reason);
    const writer = { dialect: this.#database.dialect, now: this.#clock.now(), target: (route: string) => this.#target(route) };
    await writePlan(on, writer, runId, name, writes);
    const routes = writes.flatMap((w) => (w.write === "publish" ? [w.route] : []));
    if (routes.length === 0) return;
    this.#released.set(id, routes);
    if (this.#announce.notify()) await notifyReleased(on, this.#database.dialect, this.#targets, routes);
  }

  /** The ack committed: the subscriptions of the steps it released look now, not at their next poll. */
  committed(id: unknown): void {
    const routes = this.#released.get(id);
    if (routes === undefined) return;
    this.#released.delete(id);
    for (const route of new Set(routes)) {
      const description = this.#targets.get(route)?.description;
      if (description !== undefined) this.#announce.wake(description.table, description.group === undefined ? undefined : route);
    }
  }

  #target(route: string): StepTarget {
    const target = this.#targets.get(route);
    if (target === undefined) throw stepRouteUnchecked(route);
    return target;
  }
}

/** How a follow-up tells subscriptions about the steps an ack released: `wake` this process's after the commit; `notify()`: also `NOTIFY` other processes. */
export interface ReleaseAnnounce {
  wake(table: string, group: string | undefined): void;
  notify(): boolean;
}

/**
 * `NOTIFY`s the channel of each released route's table (with the route as the group, on a group's table),
 * once each, on `on`: inside the transaction, so PostgreSQL delivers it when that commits and never
 * when it rolls back. Nothing where the engine has no `LISTEN`/`NOTIFY`.
 */
export async function notifyReleased(on: StatementRunner, dialect: EngineDialect, targets: ReadonlyMap<string, StepTarget>, routes: readonly string[]): Promise<void> {
  if (!dialect.capabilities.listenNotify) return;
  const sent = new Set<string>();
  for (const route of routes) {
    const description = targets.get(route)?.description;
    if (description === undefined) continue;
    const group = description.group === undefined ? undefined : route;
    const key = `${jobTableOf(description)}\u0000${group ?? ""}`;
    if (sent.has(key)) continue;
    sent.add(key);
    await on(dialect.notify.notify(channelOf(description), group));
  }
}
