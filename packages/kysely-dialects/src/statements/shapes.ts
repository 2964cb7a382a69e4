import type { InboxDescription } from "@sqlinbox/core/internal";
import type { CompiledQuery, Expression, SqlBool } from "kysely";
import type { ClaimOptions, TimeCodec } from "../types.js";
import type { Eb, StatementContext } from "./query-db.js";

/**
 * Statements compiled once per shape, their values filled in per call.
 *
 * Building a statement with Kysely (the operation tree, then the compiler) costs tens of
 * microseconds, and a hot claim loop builds the same text over and over: only the values
 * change (`now`, the deadline, the limit, the ids). A shape is built once with stand-ins for
 * the values, compiled, and then each call copies the parameter list and puts the values where
 * their stand-ins were. The text is Kysely's own, so it is exactly what the builder emits; a
 * test compiles every cached statement both ways and compares them.
 *
 * What makes two calls one shape is the key: everything the builder reads to decide the text
 * (a group, the number of ids in an `IN (…)` list, the number of distinct lease tokens). Values
 * that only ever become parameters are stand-ins: a time becomes a marked date that the
 * engine's time codec turns into a slot (remembering its precision), any other value a slot object.
 */

/** A value to fill in per call: a time (encoded by the engine's codec at its precision), or anything else as is. */
export type ShapeValue = unknown;

/** Where one value goes in a compiled statement's parameters. */
interface SlotUse {
  readonly index: number;
  /** The value's name; for an element of an array value, the array's name and `element` its place. */
  readonly name: string;
  readonly element: number;
  /** Set for a time: the precision the builder encoded it with. */
  readonly precision: number | undefined;
}

interface Shape {
  readonly sql: string;
  readonly template: readonly unknown[];
  readonly slots: readonly SlotUse[];
  /** The operation tree of the first build, so the compiled query keeps Kysely's full shape. */
  readonly query: CompiledQuery["query"];
  readonly queryId: CompiledQuery["queryId"];
}

/** A stand-in for a value that is not a time. */
class Slot {
  constructor(readonly name: string) {}
}

/** A stand-in for a time, as the codec returned it for the builder: which value, and at what precision. */
class TimeSlot {
  constructor(
    readonly name: string,
    readonly precision: number,
  ) {}
}

/** A date that stands in for a named time value while a shape is built; codecs see it as a date. */
class MarkedDate extends Date {
  constructor(
    readonly slotName: string,
    at: number,
  ) {
    super(at);
  }
}

/** At most this many shapes per description: a shape keyed by a list's length stays bounded. */
const MAX_SHAPES_PER_SPEC = 512;

/**
 * The shape cache of one engine: a statement context whose time codec turns marked dates into
 * slots, and per description a map from shape key to compiled shape.
 */
export class StatementShapes {
  readonly #ctx: StatementContext;
  readonly #shapeCtx: StatementContext;
  readonly #bySpec = new WeakMap<InboxDescription, Map<string, Shape>>();

  constructor(ctx: StatementContext) {
    this.#ctx = ctx;
    const time: TimeCodec = {
      truncate: ctx.time.truncate,
      decode: ctx.time.decode,
      encode: (date, precision) => (date instanceof MarkedDate ? new TimeSlot(date.slotName, precision) : ctx.time.encode(date, precision)),
    };
    this.#shapeCtx = { ...ctx, time };
  }

  /**
   * The statement `build` makes from `values`, compiled once per `key` for this description.
   * `build` receives a statement context and the values to use: on the first call for a key,
   * stand-ins; it must read nothing of them that is not in the key (lengths, presence).
   */
  fill<V extends Record<string, ShapeValue>, R>(spec: InboxDescription, key: string, values: V, build: (ctx: StatementContext, values: V) => CompiledQuery<R>): CompiledQuery<R> {
    let shapes = this.#bySpec.get(spec);
    if (shapes === undefined) {
      shapes = new Map();
      this.#bySpec.set(spec, shapes);
    }
    let shape = shapes.get(key);
    if (shape === undefined) {
      if (shapes.size >= MAX_SHAPES_PER_SPEC) return build(this.#ctx, values);
      shape = this.#compile(values, build);
      shapes.set(key, shape);
    }
    const parameters = shape.template.slice();
    const encode = this.#ctx.time.encode;
    for (const slot of shape.slots) {
      const whole = values[slot.name];
      const value = slot.element >= 0 ? (whole as readonly unknown[])[slot.element] : whole instanceof Whole ? whole.value : whole;
      parameters[slot.index] = slot.precision === undefined ? value : encode(value as Date, slot.precision);
    }
    return { sql: shape.sql, parameters, query: shape.query, queryId: shape.queryId } as CompiledQuery<R>;
  }

  #compile<V extends Record<string, ShapeValue>, R>(values: V, build: (ctx: StatementContext, values: V) => CompiledQuery<R>): Shape {
    const standIns = standInsFor(values);
    const compiled = build(this.#shapeCtx, standIns as V);
    const template: unknown[] = [];
    const slots: SlotUse[] = [];
    compiled.parameters.forEach((parameter, index) => {
      if (parameter instanceof TimeSlot) slots.push({ index, ...slotName(values, parameter.name), precision: parameter.precision });
      else if (parameter instanceof Slot) slots.push({ index, ...slotName(values, parameter.name), precision: undefined });
      else if (parameter instanceof MarkedDate) throw new Error(`statement shape: the time ${parameter.slotName} became a parameter without its codec`);
      template.push(parameter instanceof Slot || parameter instanceof TimeSlot ? undefined : parameter);
    });
    if (/\[object Object\]|Invalid Date/.test(compiled.sql)) throw new Error(`statement shape: a value was written into the text: ${compiled.sql}`);
    return { sql: compiled.sql, template, slots, query: compiled.query, queryId: compiled.queryId };
  }
}

/** A stand-in per value: marked dates for times, slots for the rest; arrays get one stand-in per element (`name.i`). */
function standInsFor(values: Record<string, ShapeValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let at = Date.UTC(2999, 0, 1);
  const marked = (name: string) => {
    at += 1_000;
    return new MarkedDate(name, at);
  };
  for (const [name, value] of Object.entries(values)) {
    if (value instanceof Date) out[name] = marked(name);
    else if (Array.isArray(value)) out[name] = value.map((element, i) => (element instanceof Date ? marked(`${name}.${i}`) : new Slot(`${name}.${i}`)));
    else if (value === undefined || value === null) out[name] = value;
    else if (value instanceof Whole) out[name] = new Slot(name);
    else out[name] = new Slot(name);
  }
  return out;
}

/** Where a slot's value is: `name`, or element `i` of the array value `name` for a slot named `name.i`. */
function slotName(values: Record<string, ShapeValue>, name: string): { name: string; element: number } {
  const dot = name.lastIndexOf(".");
  if (dot < 0 || name in values) return { name, element: -1 };
  return { name: name.slice(0, dot), element: Number(name.slice(dot + 1)) };
}

/** An array passed as one parameter (Postgres `= ANY($1)`), not spread into a list of parameters. */
export class Whole<T> {
  constructor(readonly value: readonly T[]) {}
}

/**
 * `column` is one of `ids`: one array parameter (`= any($n)`) for a whole list, or for the one value
 * a whole list stands in as while its shape is built (not an array); `= ?` for one id; else `in (?, …)`.
 */
export function idListMatch(eb: Eb, column: string, ids: readonly unknown[] | Whole<unknown>): Expression<SqlBool> {
  if (ids instanceof Whole || !Array.isArray(ids)) return eb(column, "=", eb.fn("any", [eb.val(ids instanceof Whole ? ids.value : ids)]));
  return ids.length === 1 ? eb(column, "=", ids[0]) : eb(column, "in", [...ids]);
}

/**
 * What decides a claim's text: a group, how many ids the process keeps out, a fifo group's locked
 * count, and the rows of one order key in work at once (a subscription's constant, written into the text's parameters).
 */
export function claimShapeKey(kind: string, options: ClaimOptions): string {
  return `${kind}|${options.group !== undefined ? "g" : ""}|${options.exclude?.length ?? 0}|${options.fifoLocked !== undefined ? "f" : ""}|${options.perKey ?? 1}`;
}

/** A claim's values, as `claimValues` gives them: each a stand-in while its shape is built. */
type ClaimValues = {
  limit: number;
  now: Date;
  group: string | undefined;
  exclude: readonly unknown[];
  fifoLocked: number | undefined;
};

/** A claim's values, each a stand-in while its shape is built. */
export function claimValues(options: ClaimOptions): ClaimValues {
  return { limit: options.limit, now: options.now, group: options.group, exclude: options.exclude ?? [], fifoLocked: options.fifoLocked };
}

/**
 * `ClaimOptions` back from `claimValues` (optional keys left out rather than set to undefined), with
 * what the shape key fixes taken from the call's own `options` (`perKey`).
 */
export function claimOptionsOf(values: ClaimValues, options: Pick<ClaimOptions, "perKey">): ClaimOptions {
  return {
    ...(options.perKey !== undefined ? { perKey: options.perKey } : {}),
    limit: values.limit,
    now: values.now,
    ...(values.group !== undefined ? { group: values.group } : {}),
    ...(values.exclude.length > 0 ? { exclude: values.exclude } : {}),
    ...(values.fifoLocked !== undefined ? { fifoLocked: values.fifoLocked } : {}),
  };
}
