import type { PayloadTypeMarker } from "./payload-type.js";
import type { PayloadOf, ResultOf, HasRole } from "./roles.js";
import type { AnyInboxSpec, RolesOf } from "./spec.js";
import type { Require, SpecError } from "./type-errors.js";
import { validateIdentifier } from "./identifier.js";
import { SqlInboxError } from "./errors.js";

/**
 * What the type level knows of one step: its table, the result a dependent reads from it (an
 * array, in item order, for an `each` step), and whether its table has a result column at all.
 */
export interface StepType<Spec extends AnyInboxSpec = AnyInboxSpec, Result = unknown, Each extends boolean = boolean> {
  readonly spec: Spec;
  readonly result: Result;
  readonly each: Each;
}

/** The result a dependent reads from a step: its table's result type (or `null`), or an error naming the step when its table has no result column. */
export type ReadableResult<Name extends string, S extends StepType> =
  HasRole<RolesOf<S["spec"]>, "result"> extends true
    ? S["each"] extends true
      ? ReadonlyArray<ResultOf<RolesOf<S["spec"]>> | null>
      : ResultOf<RolesOf<S["spec"]>> | null
    : SpecError<`step "${Name}" has no result to read: its table has no result column; describe .result(column(…), resultOf<T>()) on it, or drop "${Name}" from what the payload reads`>;

/** What a payload builder receives of the steps it depends on: each one's result, under its name. */
export type ResultsOf<Steps extends Record<string, StepType>, After extends string> = {
  readonly [K in After & keyof Steps & string]: ReadableResult<K, Steps[K]>;
};

/** The results of every step of a finished workflow, under their names (`null` for a step whose table has no result column). */
export type WorkflowResults<Steps extends Record<string, StepType>> = {
  readonly [K in keyof Steps & string]: HasRole<RolesOf<Steps[K]["spec"]>, "result"> extends true ? ReadableResult<K, Steps[K]> : null;
};

/** The error `after` carries when it names a step that is not declared before this one. */
type KnownSteps<Name extends string, After extends readonly string[], Steps extends Record<string, StepType>> = Require<
  [Exclude<After[number], keyof Steps>] extends [never] ? true : false,
  `step "${Name}" depends on "${Exclude<After[number], keyof Steps> & string}", which is no step declared before it: declare that step first, or fix the name`
>;

/** The error a payload builder carries when it does not return the payload of its step's table. */
type BuildsPayload<Name extends string, Built, Spec extends AnyInboxSpec> = Require<
  [Built] extends [PayloadOf<RolesOf<Spec>>] ? true : false,
  `step "${Name}": the payload builder does not return the payload of the step's table; return a value of the payload type its table describes`
>;

/** The error a step's name carries when it is taken already. */
type NewName<Name extends string, Steps extends Record<string, StepType>> = Require<
  [Name] extends [keyof Steps] ? false : true,
  `step "${Name}" is declared twice: give each step of a workflow its own name`
>;

/** What an `each` step's `over` must name: a step whose result is an array. */
type ArrayResult<Name extends string, Over extends string, Steps extends Record<string, StepType>> = Require<
  Over extends keyof Steps ? (ResultsOf<Steps, Over>[Over] extends ReadonlyArray<unknown> | null ? true : false) : false,
  `step "${Name}" fans out over "${Over}", which is no earlier step whose result is an array: name a step declared before it whose table's result type is an array`
>;

/** The element type an `each` step receives per child. */
export type ItemOf<Steps extends Record<string, StepType>, Over extends string> = Over extends keyof Steps
  ? NonNullable<ResultsOf<Steps, Over>[Over]> extends ReadonlyArray<infer I>
    ? I
    : never
  : never;

/** One step as the runtime reads it: where it publishes, what it waits for, how its payload is built. */
export interface StepDescription {
  readonly name: string;
  /** The table the step's jobs go to; the route a broker publishes them under is `route`. */
  readonly spec: AnyInboxSpec;
  /** The route the step's jobs are published under: `options.route`, else the step's name. */
  readonly route: string;
  /** The steps whose results this one needs, all done before it is released. */
  readonly after: readonly string[];
  /** A fan-out: one child job per item of this step's result. */
  readonly over: string | undefined;
  /** Builds the payload: `(input, results)`, or for a fan-out `(input, item, results, index)`. */
  readonly build: (...args: never[]) => unknown;
  /** What the step's jobs are published with beside the payload: one value, or a function of the builder's arguments. */
  readonly publish: StepPublish | ((...args: never[]) => StepPublish) | undefined;
}

/**
 * What a step's job is published with beside its payload: the options of a publish a step can take. A
 * dedup key is not among them: a key already held would make the step's job another job's.
 */
export interface StepPublish {
  /** Ms after its release before the job may be claimed (its table needs a retryAfter or a lease column). */
  readonly delay?: number;
  /** Its priority (its table needs a priority column). */
  readonly priority?: number;
  /** Data columns and the order key, by key or column name. */
  readonly columns?: Readonly<Record<string, unknown>>;
  /** Message headers (its table needs a headers column). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** `publish` of a step: one value, or a function of the run's input and the results the step reads. */
export interface StepPublishOption<Input, Results> {
  readonly publish?: StepPublish | ((input: Input, results: Results) => StepPublish);
}

/** `publish` of a fan-out: one value, or a function of what its payload builder gets, per child. */
export interface EachPublishOption<Input, Item, Results> {
  readonly publish?: StepPublish | ((input: Input, item: Item, results: Results, index: number) => StepPublish);
}

/** What `.step` takes besides its table and builder. */
export interface StepOptions<After extends readonly string[]> {
  /** The steps this one waits for; their results are handed to its payload builder. */
  readonly after?: After;
  /** The route the step's jobs are published under (default: the step's name). */
  readonly route?: string;
}

/** What `.each` takes: the step whose array result it fans out over, and what else it waits for. */
export interface EachOptions<Over extends string, After extends readonly string[]> extends StepOptions<After> {
  readonly over: Over;
}

/**
 * A workflow: named steps, each publishing jobs to a described table, each step's payload built from
 * the workflow's input and the typed results of the steps it depends on. Built immutably: each
 * `.step` returns a new workflow whose type knows one step more, so a later step can read it.
 *
 * ```ts
 * const Order = workflow("order", payloadOf<{ orderId: string }>())
 *   .step("charge", ChargeJobs, (input) => ({ orderId: input.orderId }))
 *   .step("ship", ShipJobs, { after: ["charge"] }, (_, { charge }) => ({ chargeId: charge?.id ?? "" }));
 * ```
 */
export class Workflow<Name extends string = string, Input = unknown, Steps extends Record<string, StepType> = Record<never, StepType>> {
  declare readonly "~input": Input;
  declare readonly "~steps": Steps;
  readonly name: Name;
  readonly steps: readonly StepDescription[];
  /** How long finished runs are kept (`retain`); absent: for ever. */
  readonly retention: WorkflowRetention | undefined;

  /** Use `workflow(name, payloadOf<Input>())`. */
  constructor(name: Name, steps: readonly StepDescription[], retention?: WorkflowRetention) {
    this.name = name;
    this.steps = Object.freeze([...steps]);
    this.retention = retention;
    Object.freeze(this);
  }

  /**
   * How long the workflow table keeps a finished run (its own row, its steps' and its children's), in ms
   * after it finished, by how it ended; a state left out keeps those runs for ever. Every app whose broker
   * registers the workflow deletes them in small batches, with no leader. A `failed` run is resumed by
   * moving its dead letter back, which needs the run: keep failed runs at least as long as a dead letter
   * may wait to be moved back. The step jobs' own rows are the queues' (`InboxQueue.retain`).
   *
   * @example
   * workflow("order", payloadOf<Order>()).step(…).retain({ done: 7 * 24 * 3_600_000, cancelled: 24 * 3_600_000 })
   */
  retain(windows: WorkflowRetention): Workflow<Name, Input, Steps> {
    const at = `workflow "${this.name}": retain`;
    const keys = Object.keys(windows);
    if (keys.length === 0) throw new SqlInboxError("Declaration", `${at} names no window: give done, cancelled or failed (ms)`);
    for (const key of keys) {
      if (key !== "done" && key !== "cancelled" && key !== "failed")
        throw new SqlInboxError("Declaration", `${at}: "${key}" is no run state a window applies to (done, cancelled, failed)`);
      const ms = windows[key];
      if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 1)
        throw new SqlInboxError("Declaration", `${at}: ${key} must be a whole number of ms, at least 1; got ${String(ms)}`);
    }
    return new Workflow(this.name, this.steps, Object.freeze({ ...windows }));
  }

  /**
   * A step: `build(input, results)` makes the payload of its job in `spec`'s table, from the
   * workflow's input and the results of the steps named in `after`. A step with no `after` is
   * published when the workflow starts; the others when their last dependency is acked.
   */
  step<const N extends string, S extends AnyInboxSpec, R>(
    name: N & NewName<N, Steps>,
    spec: S,
    build: (input: Input, results: ResultsOf<Steps, never>) => R & BuildsPayload<N, R, S>,
  ): Workflow<Name, Input, Steps & { readonly [K in N]: StepType<S, ResultOf<RolesOf<S>>, false> }>;
  step<const N extends string, S extends AnyInboxSpec, R, const A extends readonly string[] = []>(
    name: N & NewName<N, Steps>,
    spec: S,
    options: StepOptions<A> & KnownSteps<N, A, Steps> & StepPublishOption<Input, ResultsOf<Steps, A[number]>>,
    build: (input: Input, results: ResultsOf<Steps, A[number]>) => R & BuildsPayload<N, R, S>,
  ): Workflow<Name, Input, Steps & { readonly [K in N]: StepType<S, ResultOf<RolesOf<S>>, false> }>;
  step(name: string, spec: AnyInboxSpec, optionsOrBuild: StepOptions<readonly string[]> | StepDescription["build"], maybeBuild?: StepDescription["build"]): unknown {
    const options = typeof optionsOrBuild === "function" ? {} : optionsOrBuild;
    const build = typeof optionsOrBuild === "function" ? optionsOrBuild : maybeBuild;
    return this.#add(name, spec, options, undefined, build);
  }

  /**
   * A fan-out: one job in `spec`'s table per item of the array result of step `over`, each payload
   * built by `build(input, item, results, index)`. A step that depends on it waits for every child
   * and reads their results as an array, in item order. An empty array finishes the step at once.
   */
  each<const N extends string, S extends AnyInboxSpec, const O extends string, const A extends readonly string[] = [], R = unknown>(
    name: N & NewName<N, Steps>,
    spec: S,
    options: EachOptions<O, A> & KnownSteps<N, A, Steps> & ArrayResult<N, O, Steps> & EachPublishOption<Input, ItemOf<Steps, O>, ResultsOf<Steps, A[number] | O>>,
    build: (input: Input, item: ItemOf<Steps, O>, results: ResultsOf<Steps, A[number] | O>, index: number) => R & BuildsPayload<N, R, S>,
  ): Workflow<Name, Input, Steps & { readonly [K in N]: StepType<S, ResultOf<RolesOf<S>>, true> }> {
    return this.#add(name, spec, options, options.over, build) as never;
  }

  #add(name: string, spec: AnyInboxSpec, options: StepOptions<readonly string[]>, over: string | undefined, build: unknown): Workflow<Name, Input, Steps> {
    const at = `workflow "${this.name}", step "${name}"`;
    validateIdentifier(name, `workflow "${this.name}": the step`);
    if (this.steps.some((s) => s.name === name)) throw new SqlInboxError("Declaration", `${at}: a step of this name is declared already; give each step its own name`);
    if (typeof build !== "function") throw new TypeError(`${at}: the payload builder must be a function`);
    const after = [...(options.after ?? [])];
    if (over !== undefined && !after.includes(over)) after.push(over);
    for (const dep of after) {
      if (!this.steps.some((s) => s.name === dep)) throw new SqlInboxError("Declaration", `${at}: depends on "${dep}", which is no step declared before it`);
    }
    const publish = (options as { publish?: unknown }).publish;
    if (publish !== undefined && typeof publish !== "function" && (typeof publish !== "object" || publish === null)) {
      throw new TypeError(`${at}: publish must be the options a step's job is published with, or a function that returns them`);
    }
    const step: StepDescription = Object.freeze({
      name,
      spec,
      route: options.route ?? name,
      after: Object.freeze(after),
      over,
      build: build as StepDescription["build"],
      publish: publish as StepDescription["publish"],
    });
    return new Workflow(this.name, [...this.steps, step], this.retention);
  }
}

/** How long finished runs are kept, in ms after they finished, by how they ended (`Workflow.retain`). */
export interface WorkflowRetention {
  /** Runs whose every step was acked. */
  readonly done?: number;
  /** Runs cancelled (`run.cancel()`, `broker.cancelWorkflow`). */
  readonly cancelled?: number;
  /** Runs a step of which failed for good (dead-lettered, dropped, a payload builder that threw). */
  readonly failed?: number;
}

/** Any workflow, whatever its input and steps: what a broker registers. */
// biome-ignore lint/suspicious/noExplicitAny: any input and any steps
export type AnyWorkflow = Workflow<string, any, any>;
/** A workflow's input type. */
export type WorkflowInput<W> = W extends Workflow<string, infer I, Record<string, StepType>> ? I : never;
/** A workflow's step types, by name. */
export type WorkflowSteps<W> = W extends Workflow<string, unknown, infer S> ? S : never;

/**
 * Starts a workflow's description: its name (unique among a broker's workflows, stored with every
 * run) and its input's type. Add steps with `.step` and `.each`.
 */
export function workflow<const Name extends string, Input>(name: Name, _input: PayloadTypeMarker<Input>): Workflow<Name, Input> {
  validateIdentifier(name, "the workflow");
  return new Workflow(name, []);
}
