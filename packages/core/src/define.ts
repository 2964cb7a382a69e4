import type { ColumnDescription } from "./description.js";
import { validateIdentifier } from "./identifier.js";
import type {
  AdvisoryLock,
  Attempt,
  ColumnRole,
  DedupKey,
  FailedAttempts,
  Fifo,
  Group,
  LastError,
  Lease,
  MessageHeaders,
  OrderKey,
  Payload,
  Priority,
  ProcessedAt,
  Progress,
  Result,
  RetryAfter,
  RowValue,
  TemplatePlaceholders,
  TypedRole,
} from "./roles.js";
import type { Simplify } from "type-fest";
import { InboxSpec } from "./spec.js";
import type { SpecError } from "./type-errors.js";
import type { PayloadType } from "./payload-type.js";
import { validatePortableType, type PortableType } from "./portable-type.js";

/**
 * One column of the declarative form. `Name` is the column's name when it differs
 * from the property key; `Value` is what the column holds in the application.
 */
export interface Field<Role extends ColumnRole = ColumnRole, Name extends string | undefined = string | undefined, Value = unknown> {
  readonly role: Role;
  readonly name: Name;
  readonly isGenerated: boolean;
  /** The payload's Standard Schema or type marker, on a payload field. */
  readonly payloadType: unknown;
  /** The portable type given with `.type(…)` (id and data fields); undefined when none. */
  readonly sqlType: PortableType | undefined;
  /**
   * @internal phantom: the value type (a payload's decoded type, a lease's deadline type). Required
   * (and undefined): an optional one would make TypeScript, under exactOptionalPropertyTypes, end a
   * broken rule's message with a misleading "Consider adding 'undefined'".
   */
  readonly value: Value | undefined;
  /** The database fills this column: a publish never writes it. */
  generated(): Field<Role, Name, Value>;
  /** Types what an id or data column holds for row-mode handlers: `field.data("customer_id").holds<string>()`. */
  holds<T>(): Field<Role, Name, T>;
  /**
   * The column's type in the table `createInboxTable` creates: `field.data("customer_id").holds<number>().type("bigint")`.
   * Id and data fields only: every other role's type is fixed by the role, and there the argument's type is the error
   * that says so. It still returns the field, so that the description around it reports nothing else.
   */
  readonly type: Role extends TypedRole
    ? (type: PortableType) => Field<Role, Name, Value>
    : (type: SpecError<`the ${Role} column's type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)`>) => Field<Role, Name, Value>;
}

function makeField<Role extends ColumnRole, Name extends string | undefined, Value>(
  role: Role,
  name: Name,
  isGenerated = false,
  payloadType?: unknown,
  sqlType?: PortableType,
): Field<Role, Name, Value> {
  if (name !== undefined) validateIdentifier(name, `column (${role})`);
  const typed = (type: PortableType) => makeField<Role, Name, Value>(role, name, isGenerated, payloadType, validatePortableType(type, name ?? role));
  return Object.freeze({
    role,
    name,
    isGenerated,
    payloadType,
    sqlType,
    value: undefined,
    generated: () => makeField<Role, Name, Value>(role, name, true, payloadType, sqlType),
    holds: <T>() => makeField<Role, Name, T>(role, name, isGenerated, payloadType, sqlType),
    // A role whose type is fixed gets the method too (a JavaScript caller); the description refuses the type.
    type: typed as Field<Role, Name, Value>["type"],
  });
}

/**
 * The column roles of the declarative form. Each takes the column's name when it differs
 * from the property key: `lockedUntil: field.lease("locked_until")`.
 *
 * The return types say `NoInfer<N>`: without it, a bare `field.id()` inside `defineInbox({ … })`
 * would take its name type from the context (`string | undefined`) instead of `undefined`,
 * and every column would look like it shares every name.
 */
export const field = Object.freeze({
  /** `field.id<number>()` types the id a row-mode handler reads (default `unknown`). */
  id: <T = unknown, const N extends string | undefined = undefined>(name?: N): Field<"id", NoInfer<N>, T> => makeField("id", name as N),
  attempt: <const N extends string | undefined = undefined>(name?: N): Field<"attempt", NoInfer<N>, number> => makeField("attempt", name as N),
  lease: <const N extends string | undefined = undefined>(name?: N): Field<"lease", NoInfer<N>, Date> => makeField("lease", name as N),
  /** `field.payload<Report>()`, or `field.payload("body", ReportSchema)` to name the column and validate. */
  payload: <T = unknown, const N extends string | undefined = undefined>(name?: N, type?: PayloadType<T>): Field<"payload", NoInfer<N>, T> =>
    makeField("payload", name as N, false, type),
  retryAfter: <const N extends string | undefined = undefined>(name?: N): Field<"retryAfter", NoInfer<N>, Date> => makeField("retryAfter", name as N),
  processedAt: <const N extends string | undefined = undefined>(name?: N): Field<"processedAt", NoInfer<N>, Date> => makeField("processedAt", name as N),
  group: <const N extends string | undefined = undefined>(name?: N): Field<"group", NoInfer<N>, string> => makeField("group", name as N),
  priority: <const N extends string | undefined = undefined>(name?: N): Field<"priority", NoInfer<N>, number> => makeField("priority", name as N),
  /**
   * The order key: rows that share its value run one at a time (or up to `maxInWorkPerKey(n)`), in id
   * order, across every process; different keys run side by side. `field.orderKey("account_id").holds<number>().type("bigint")`.
   */
  orderKey: <T = unknown, const N extends string | undefined = undefined>(name?: N): Field<"orderKey", NoInfer<N>, T> => makeField("orderKey", name as N),
  /** JSON string pairs carried from publish to `keys.headers` (a W3C `traceparent`, …). */
  headers: <const N extends string | undefined = undefined>(name?: N): Field<"headers", NoInfer<N>, Readonly<Record<string, string>>> => makeField("headers", name as N),
  /** Dead-letter destinations: the last error a moved row failed with (text). */
  lastError: <const N extends string | undefined = undefined>(name?: N): Field<"lastError", NoInfer<N>, string> => makeField("lastError", name as N),
  /** Dead-letter destinations: the attempts a moved row had spent (a number). */
  failedAttempts: <const N extends string | undefined = undefined>(name?: N): Field<"failedAttempts", NoInfer<N>, number> => makeField("failedAttempts", name as N),
  /** A dedup key (text): the table gets a unique index on it, so at most one row holds a key. */
  key: <const N extends string | undefined = undefined>(name?: N): Field<"key", NoInfer<N>, string> => makeField("key", name as N),
  /** The result an ack writes (`ctx.ack(result)`), as JSON: `field.result<ExportFile>()`. Needs a processedAt column. */
  result: <T = unknown, const N extends string | undefined = undefined>(name?: N): Field<"result", NoInfer<N>, T> => makeField("result", name as N),
  /** The progress a handler reports (`ctx.progress(value)`), as JSON: `field.progress<{ done: number }>()`. Lease and advisory forms. */
  progress: <T = unknown, const N extends string | undefined = undefined>(name?: N): Field<"progress", NoInfer<N>, T> => makeField("progress", name as N),
  /** `field.data<string>()` types what a row-mode handler reads (default `unknown`). */
  data: <T = unknown, const N extends string | undefined = undefined>(name?: N): Field<"data", NoInfer<N>, T> => makeField("data", name as N),
});

/** A declarative table description. */
export interface InboxDefinition {
  readonly table: string;
  /** The Postgres schema or MySQL/MariaDB database that holds the table (refused on SQLite). */
  readonly schema?: string;
  readonly columns: { readonly [key: string]: Field };
  /** An advisory key template such as `"report-{customer_id}"`: selects the advisory form. */
  readonly advisoryLock?: string;
  /** With a group column: one row of a group in work at a time, in order. */
  readonly fifo?: boolean;
}

type Cols<D extends InboxDefinition> = D["columns"];
/** The database name of the column under key `K`. */
type ColumnName<D extends InboxDefinition, K extends keyof Cols<D>> = Cols<D>[K] extends Field<ColumnRole, infer N, unknown> ? (N extends string ? N : K & string) : never;
type AllNames<D extends InboxDefinition> = { [K in keyof Cols<D>]: ColumnName<D, K> }[keyof Cols<D>];
type RoleAt<D extends InboxDefinition, K extends keyof Cols<D>> = Cols<D>[K]["role"];
type KeysWithRole<D extends InboxDefinition, Role extends ColumnRole> = { [K in keyof Cols<D>]: RoleAt<D, K> extends Role ? K : never }[keyof Cols<D>];
type ValueOf<D extends InboxDefinition, Role extends ColumnRole> = Cols<D>[KeysWithRole<D, Role>] extends Field<ColumnRole, string | undefined, infer V> ? V : never;

type RolesTwice<D extends InboxDefinition> = {
  [K in keyof Cols<D>]: RoleAt<D, K> extends "data"
    ? never
    : { [O in Exclude<keyof Cols<D>, K>]: RoleAt<D, O> extends RoleAt<D, K> ? RoleAt<D, K> : never }[Exclude<keyof Cols<D>, K>];
}[keyof Cols<D>];
type NamesTwice<D extends InboxDefinition> = {
  [K in keyof Cols<D>]: { [O in Exclude<keyof Cols<D>, K>]: ColumnName<D, O> extends ColumnName<D, K> ? ColumnName<D, K> : never }[Exclude<keyof Cols<D>, K>];
}[keyof Cols<D>];
type Has<D extends InboxDefinition, Role extends ColumnRole> = [KeysWithRole<D, Role>] extends [never] ? false : true;
type AdvisoryOf<D extends InboxDefinition> = D extends { readonly advisoryLock: infer T extends string } ? T : never;
type FifoOf<D extends InboxDefinition> = D extends { readonly fifo: true } ? true : false;

/** The first broken rule of a definition, as a readable error; `unknown` when it is valid. */
export type CheckDefinition<D extends InboxDefinition> =
  CheckRoles<D> extends SpecError<string> ? CheckRoles<D> : CheckOrderKey<D> extends SpecError<string> ? CheckOrderKey<D> : CheckResult<D>;

/** A result column needs processedAt: an ack that deletes the row would delete its result. */
type CheckResult<D extends InboxDefinition> =
  Has<D, "result"> extends true
    ? Has<D, "processedAt"> extends true
      ? unknown
      : SpecError<"a result column needs a processedAt column: this table's ack deletes the row, and the result with it; describe one with field.processedAt()">
    : unknown;

/** An order key excludes a group (and so fifo) and an advisory key. */
type CheckOrderKey<D extends InboxDefinition> =
  Has<D, "orderKey"> extends false
    ? unknown
    : Has<D, "group"> extends true
      ? SpecError<"an order key and a group exclude each other: keep the order key, or the group (and fifo), not both">
      : [AdvisoryOf<D>] extends [never]
        ? unknown
        : SpecError<"an order key and an advisory key exclude each other: name its column in the key template and drop the order key">;

type CheckRoles<D extends InboxDefinition> =
  Has<D, "id"> extends false
    ? SpecError<"no id column is described: add one with field.id()">
    : [RolesTwice<D>] extends [never]
      ? [NamesTwice<D>] extends [never]
        ? [AdvisoryOf<D>] extends [never]
          ? FifoOf<D> extends true
            ? Has<D, "group"> extends true
              ? unknown
              : SpecError<"fifo needs a group column: describe one with field.group(), or drop fifo">
            : unknown
          : Has<D, "lease"> extends true
            ? SpecError<"a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both">
            : FifoOf<D> extends true
              ? SpecError<"fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them">
              : [Exclude<TemplatePlaceholders<AdvisoryOf<D>>, AllNames<D> | (keyof Cols<D> & string)>] extends [never]
                ? unknown
                : SpecError<`the advisory key names a column that is not described: describe ${Exclude<TemplatePlaceholders<AdvisoryOf<D>>, AllNames<D> | (keyof Cols<D> & string)> & string} (as field.data() if it plays no role)`>
        : SpecError<`column "${NamesTwice<D> & string}" is described twice: describe each column once`>
      : SpecError<`the ${RolesTwice<D> & string} role is played by two columns: a table has at most one ${RolesTwice<D> & string} column, so describe the others with field.data()`>;

type KeysNamed<D extends InboxDefinition, Name> = { [K in keyof Cols<D>]: ColumnName<D, K> extends Name ? K : never }[keyof Cols<D>];
/** The error `E` on the columns under `Keys`: intersected with a definition, it lands on those properties. */
export type OnColumns<Keys extends PropertyKey, E> = { readonly columns: { readonly [K in Keys]: E } };

/**
 * The first broken rule of a definition placed on the property that breaks it (a column, `fifo`,
 * `advisoryLock`), `unknown` when it is valid. Intersected with the parameter, the compiler
 * underlines that property and names the rule's sentence in the first line of its message.
 */
export type DefinitionErrorAt<D extends InboxDefinition> =
  CheckDefinition<D> extends infer E extends SpecError<string>
    ? CheckRoles<D> extends SpecError<string>
      ? RolesErrorAt<D, E>
      : CheckOrderKey<D> extends SpecError<string>
        ? OnColumns<KeysWithRole<D, "orderKey">, E>
        : OnColumns<KeysWithRole<D, "result">, E>
    : unknown;

type RolesErrorAt<D extends InboxDefinition, E> =
  Has<D, "id"> extends false
    ? { readonly columns: E }
    : [RolesTwice<D>] extends [never]
      ? [NamesTwice<D>] extends [never]
        ? [AdvisoryOf<D>] extends [never]
          ? { readonly fifo: E }
          : Has<D, "lease"> extends true
            ? { readonly advisoryLock: E }
            : FifoOf<D> extends true
              ? { readonly fifo: E }
              : { readonly advisoryLock: E }
        : OnColumns<KeysNamed<D, NamesTwice<D>>, E>
      : OnColumns<KeysWithRole<D, RolesTwice<D>>, E>;

type Opt<D extends InboxDefinition, Role extends ColumnRole, M> = Has<D, Role> extends true ? [M] : [];
/** The role tuple of a definition, in a fixed order. */
export type RolesOfDefinition<D extends InboxDefinition> = [
  ...Opt<D, "attempt", Attempt>,
  ...Opt<D, "lease", Lease<Date>>,
  ...Opt<D, "payload", Payload<ValueOf<D, "payload">>>,
  ...Opt<D, "retryAfter", RetryAfter>,
  ...Opt<D, "processedAt", ProcessedAt>,
  ...Opt<D, "group", Group>,
  ...(FifoOf<D> extends true ? [Fifo] : []),
  ...Opt<D, "priority", Priority>,
  ...Opt<D, "orderKey", OrderKey>,
  ...Opt<D, "headers", MessageHeaders>,
  ...([AdvisoryOf<D>] extends [never] ? [] : [AdvisoryLock<AdvisoryOf<D>>]),
  ...Opt<D, "lastError", LastError>,
  ...Opt<D, "failedAttempts", FailedAttempts>,
  ...Opt<D, "key", DedupKey>,
  ...Opt<D, "result", Result<ValueOf<D, "result">>>,
  ...Opt<D, "progress", Progress<ValueOf<D, "progress">>>,
];

/** The row a row-mode handler receives: each column under its property key. */
export type RowOfDefinition<D extends InboxDefinition> = Simplify<{
  readonly [K in keyof Cols<D> & string]: Cols<D>[K] extends Field<infer Role, string | undefined, infer V> ? RowValue<Role, V> : never;
}>;

/** The spec type a definition produces: the same type the by-hand form builds. */
export type SpecOfDefinition<D extends InboxDefinition> = InboxSpec<RolesOfDefinition<D>, AllNames<D>, RowOfDefinition<D>, DataOfDefinition<D>>;

/** The data columns of a definition (and its order key, which a publish writes too) under their property keys, each with the type it holds. */
export type DataOfDefinition<D extends InboxDefinition> = Simplify<{
  readonly [K in KeysWithRole<D, "data" | "orderKey"> & string]: Cols<D>[K] extends Field<ColumnRole, string | undefined, infer V> ? V : never;
}>;

/** Builds the spec of a checked definition; shared by both overloads of `defineInbox`. */
export function specFromDefinition<D extends InboxDefinition>(def: D): SpecOfDefinition<D> {
  const columns: ColumnDescription[] = Object.entries(def.columns).map(([key, f]) => ({
    name: f.name ?? key,
    key,
    role: f.role,
    generated: f.isGenerated,
    ...(f.sqlType !== undefined ? { type: f.sqlType } : {}),
  }));
  const payloadType = Object.values(def.columns).find((f) => f.role === "payload")?.payloadType;
  return InboxSpec.fromParts({ table: def.table, schema: def.schema, columns, advisoryLock: def.advisoryLock, fifo: def.fifo, payloadType });
}
