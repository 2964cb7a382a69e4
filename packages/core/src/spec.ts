import { buildDescription, type DescriptionParts } from "./build-description.js";
import type { Column } from "./column.js";
import type { ColumnDescription, InboxDescription } from "./description.js";
import type {
  AdvisoryLock,
  Attempt,
  ClaimForm,
  ColumnRole,
  DedupKey,
  Fifo,
  FormOf,
  FailedAttempts,
  Group,
  HasRole,
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
  RoleMarker,
  RoleName,
  RowValue,
  TemplatePlaceholders,
} from "./roles.js";
import type { FirstError, Require } from "./type-errors.js";
import type { PayloadType, ValueTypeMarker } from "./payload-type.js";
import type { PortableType } from "./portable-type.js";
import type { Simplify } from "type-fest";

type NotTwice<R extends readonly RoleMarker[], Role extends RoleName> = Require<
  HasRole<R, Role> extends true ? false : true,
  `the ${Role} role is already played by a column: a table has at most one ${Role} column, so describe this one with .data(…) or drop it`
>;
type NewColumn<C extends string, N extends string> = Require<[N] extends [C] ? false : true, `column "${N}" is already described: describe each column once`>;
/** The column names a spec describes (its `C`). */
type ColumnsOf<S> = S extends { readonly [specBrand]: { columns: infer C extends string } } ? C : never;
type Without<R extends readonly RoleMarker[], Role extends RoleName, Message extends string> = Require<HasRole<R, Role> extends true ? false : true, Message>;
/** A role whose column type the role fixes refuses a column given a `.type(…)`. */
type Untyped<T, Role extends RoleName> = Require<
  [T] extends [undefined] ? true : false,
  `the ${Role} column's type is fixed by its role: drop .type(…) (only id, order key and data columns take a type)`
>;
type LeaseOrAdvisory = "a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both";
type OrderKeyWithGroup = "an order key and a group exclude each other: keep the order key, or the group (and fifo), not both";
type OrderKeyWithAdvisory = "an order key and an advisory key exclude each other: name its column in the key template and drop the order key";
type FifoWithAdvisory = "fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them";

/** No data columns known. */
type NoData = Record<never, never>;

const specBrand: unique symbol = Symbol("sqlinbox.InboxSpec");

/**
 * A table description, built by hand (`InboxSpec.table(…)…`) or by `defineInbox`.
 * Its type carries the role tuple, so `InboxSpec<[Attempt, Lease<Date>, Payload<Report>]>`
 * says at compile time which form the table uses and what its handlers receive.
 * `C` is the union of described column names, `Row` the row a row-mode handler receives
 * (each described column under its key, typed by its role or by what it `holds`), `Data` the data
 * columns alone (what a publish's `columns` option may set).
 *
 * Immutable: every method returns a new frozen spec.
 *
 * @example
 * const RenderReport = InboxSpec.table("report_jobs", column("id").generated())
 *   .attempt(column("attempt").generated())
 *   .lease(column("locked_until"))
 *   .payload(column("payload"), payloadOf<Report>());
 * // RenderReport: InboxSpec<[Attempt, Lease<Date>, Payload<Report>], "id" | "attempt" | "locked_until" | "payload", { … }>
 */
// Covariant, and checked so by the compiler: a spec that knows more columns is usable where fewer are
// named, so `const s: InboxSpec<[Attempt, Lease<Date>, Payload<Report>]> = InboxSpec.table(…)…` compiles.
// That holds because no parameter type names R, C, Row or Data: each method reads the rules of the
// spec it is called on through its own `this` (a type parameter `S`; `fifo`'s `this` type), since a rule
// is a conditional type, and a conditional type of R or C in a parameter makes the class invariant. The
// shipped declarations then type-check with `skipLibCheck` off, as an application compiles them.
export class InboxSpec<
  out R extends readonly RoleMarker[] = readonly RoleMarker[],
  out C extends string = string,
  out Row extends object = ColumnsRow<C>,
  out Data extends object = NoData,
> {
  declare readonly [specBrand]: { roles: R; columns: C; row: Row; data: Data };
  /** The plain description the statements and the runtime read. */
  readonly description: InboxDescription;
  readonly #parts: DescriptionParts;

  private constructor(parts: DescriptionParts) {
    this.description = buildDescription(parts);
    this.#parts = parts;
    Object.freeze(this);
  }

  /** Starts a description: the table and its id column. */
  static table<const N extends string, V = unknown>(table: string, id: Column<N, boolean, V>): InboxSpec<[], N, { readonly [P in N]: V }> {
    return new InboxSpec({ table, columns: [describe(id, "id")] });
  }

  /** @internal Used by `defineInbox`: the parts are checked exactly as the builder's. */
  static fromParts<R extends readonly RoleMarker[], C extends string, Row extends object, Data extends object = NoData>(parts: DescriptionParts): InboxSpec<R, C, Row, Data> {
    return new InboxSpec(parts);
  }

  get table(): string {
    return this.description.table;
  }
  get form(): FormOf<R> {
    return this.description.form as FormOf<R>;
  }

  /** The attempt column: counted at each claim; handlers read it as `keys.attempt`. */
  attempt<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "attempt">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "attempt">]>,
  ): InboxSpec<[...RolesOf<S>, Attempt], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"attempt", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "attempt");
  }

  /** The lease column: selects the lease form. Its deadline is the token of ownership. */
  lease<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> &
      FirstError<[NotTwice<RolesOf<S>, "lease">, NewColumn<ColumnsOf<S>, N>, Without<RolesOf<S>, "advisoryLock", LeaseOrAdvisory>, Untyped<Ty, "lease">]>,
  ): InboxSpec<[...RolesOf<S>, Lease<Date>], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"lease", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "lease");
  }

  /**
   * The payload column: the handler receives the decoded payload. Its type comes from
   * the second argument: `payloadOf<Report>()`, or a Standard Schema that also validates it.
   */
  payload<N extends string, T = unknown, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "payload">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "payload">]>,
    type?: PayloadType<T>,
  ): InboxSpec<[...RolesOf<S>, Payload<T>], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"payload", unknown>>, DataOf<S>> {
    return InboxSpec.#next(this, (parts) => ({ ...parts, columns: [...parts.columns, describe(col, "payload")], payloadType: type }));
  }

  /** The column that hides a row until a time (`HandlerOutcome.retryAfter`); claim order uses it. */
  retryAfter<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "retryAfter">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "retryAfter">]>,
  ): InboxSpec<[...RolesOf<S>, RetryAfter], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"retryAfter", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "retryAfter");
  }

  /** The column ack marks instead of deleting the row. */
  processedAt<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "processedAt">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "processedAt">]>,
  ): InboxSpec<[...RolesOf<S>, ProcessedAt], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"processedAt", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "processedAt");
  }

  /** The group column: a subscription name selects a group. */
  group<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> &
      FirstError<[NotTwice<RolesOf<S>, "group">, NewColumn<ColumnsOf<S>, N>, Without<RolesOf<S>, "orderKey", OrderKeyWithGroup>, Untyped<Ty, "group">]>,
  ): InboxSpec<[...RolesOf<S>, Group], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"group", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "group");
  }

  /** Smaller is claimed first. */
  priority<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "priority">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "priority">]>,
  ): InboxSpec<[...RolesOf<S>, Priority], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"priority", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "priority");
  }

  /**
   * The order key column (`account_id`): within one subscription, rows that share a key run one at
   * a time, in id order, across every worker and process; different keys run side by side.
   * `InboxQueue.maxInWorkPerKey(n)` lets up to n rows of a key run at once. Excludes a group and an
   * advisory key. Its value is the application's (`.holds<number>()`, `.type("bigint")`), written by
   * a publish's `columns`.
   *
   * @example
   * InboxSpec.table("ledger_jobs", column("id").generated()).lease(column("locked_until")).orderKey(column("account_id").type("bigint"))
   */
  orderKey<N extends string, V = unknown, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, V, Ty> &
      FirstError<
        [NotTwice<RolesOf<S>, "orderKey">, NewColumn<ColumnsOf<S>, N>, Without<RolesOf<S>, "group", OrderKeyWithGroup>, Without<RolesOf<S>, "advisoryLock", OrderKeyWithAdvisory>]
      >,
  ): InboxSpec<[...RolesOf<S>, OrderKey], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, V>, WithColumn<DataOf<S>, N, V>> {
    return InboxSpec.#with(this, col, "orderKey");
  }

  /**
   * The headers column: JSON string pairs (such as a W3C `traceparent`) written by
   * `publish(…, { headers })` and read by handlers as `keys.headers`.
   */
  headers<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "headers">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "headers">]>,
  ): InboxSpec<[...RolesOf<S>, MessageHeaders], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"headers", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "headers");
  }

  /**
   * The Postgres schema or MySQL/MariaDB database that holds the table: every statement names
   * `schema.table`. Refused at startup on SQLite. Validated like any identifier.
   */
  schema(name: string): InboxSpec<R, C, Row, Data> {
    return new InboxSpec({ ...this.#parts, schema: name });
  }

  /** Dead-letter destinations: the column a move writes the last error into (text). */
  lastError<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "lastError">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "lastError">]>,
  ): InboxSpec<[...RolesOf<S>, LastError], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"lastError", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "lastError");
  }

  /** Dead-letter destinations: the column a move writes the attempts spent into (a number). */
  failedAttempts<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "failedAttempts">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "failedAttempts">]>,
  ): InboxSpec<[...RolesOf<S>, FailedAttempts], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"failedAttempts", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "failedAttempts");
  }

  /**
   * The dedup key column: the table gets a unique index on it, so at most one row holds a key.
   * Text; a publish without a key leaves it NULL, which never collides.
   */
  key<N extends string, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "key">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "key">]>,
  ): InboxSpec<[...RolesOf<S>, DedupKey], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"key", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "key");
  }

  /**
   * The result column: an ack writes the handler's result (`ctx.ack(result)`) into it as JSON, in
   * the ack's own fenced statement. Needs a processedAt column described before it (an ack that
   * deletes the row would delete its result).
   */
  result<N extends string, T = unknown, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> &
      FirstError<
        [
          Require<
            HasRole<RolesOf<S>, "processedAt">,
            "a result column needs a processedAt column: this table's ack deletes the row, and the result with it; describe .processedAt(column(…)) before .result(…)"
          >,
          NotTwice<RolesOf<S>, "result">,
          NewColumn<ColumnsOf<S>, N>,
          Untyped<Ty, "result">,
        ]
      >,
    _type?: ValueTypeMarker<T>,
  ): InboxSpec<[...RolesOf<S>, Result<T>], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"result", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "result");
  }

  /** The progress column: `ctx.progress(value)` writes into it as JSON while the row is in work (lease and advisory forms). */
  progress<N extends string, T = unknown, Ty extends PortableType | undefined = undefined, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, unknown, Ty> & FirstError<[NotTwice<RolesOf<S>, "progress">, NewColumn<ColumnsOf<S>, N>, Untyped<Ty, "progress">]>,
    _type?: ValueTypeMarker<T>,
  ): InboxSpec<[...RolesOf<S>, Progress<T>], ColumnsOf<S> | N, WithColumn<RowOf<S>, N, RowValue<"progress", unknown>>, DataOf<S>> {
    return InboxSpec.#with(this, col, "progress");
  }

  /** A column that plays no role: read by row-mode handlers, named by advisory keys, written by publishes. */
  data<N extends string, V = unknown, S extends AnyInboxSpec = this>(
    this: S,
    col: Column<N, boolean, V> & NewColumn<ColumnsOf<S>, N>,
  ): InboxSpec<RolesOf<S>, ColumnsOf<S> | N, WithColumn<RowOf<S>, N, V>, WithColumn<DataOf<S>, N, V>> {
    return InboxSpec.#with(this, col, "data");
  }

  /**
   * With a group: one row of a group in work at a time, in order.
   * The rules sit on `this`, so a broken one reads "The 'this' context … is not assignable to … SpecError<"…">".
   */
  fifo(
    this: this &
      FirstError<
        [
          Require<HasRole<RolesOf<this>, "group">, "fifo needs a group column: describe one with .group(column(…)) before .fifo()">,
          Without<RolesOf<this>, "advisoryLock", FifoWithAdvisory>,
          Without<RolesOf<this>, "fifo", "fifo is already set: call .fifo() once">,
        ]
      >,
  ): InboxSpec<[...RolesOf<this>, Fifo], ColumnsOf<this>, RowOf<this>, DataOf<this>> {
    return InboxSpec.#next(this, (parts) => ({ ...parts, fifo: true }));
  }

  /**
   * An advisory key template (`"report-{customer_id}"`): selects the advisory form.
   * Its placeholders name described columns; describe them before calling this.
   */
  advisoryLock<const T extends string, S extends AnyInboxSpec = this>(
    this: S,
    template: T &
      FirstError<
        [
          Without<RolesOf<S>, "lease", LeaseOrAdvisory>,
          Without<RolesOf<S>, "advisoryLock", "the advisory key is already set: a table has one key template, so call .advisoryLock(…) once">,
          Without<RolesOf<S>, "fifo", FifoWithAdvisory>,
          Without<RolesOf<S>, "orderKey", OrderKeyWithAdvisory>,
          Require<
            [Exclude<TemplatePlaceholders<T>, ColumnsOf<S>>] extends [never] ? true : false,
            `the advisory key names a column that is not described: describe ${Exclude<TemplatePlaceholders<T>, ColumnsOf<S>> & string} first (with .data(column(…)) if it plays no role)`
          >,
        ]
      >,
  ): InboxSpec<[...RolesOf<S>, AdvisoryLock<T>], ColumnsOf<S>, RowOf<S>, DataOf<S>> {
    return InboxSpec.#next(this, (parts) => ({ ...parts, advisoryLock: template }));
  }

  /** A new spec from `spec`'s parts, changed; the caller's signature states the type it becomes. */
  static #next(spec: AnyInboxSpec, change: (parts: DescriptionParts) => DescriptionParts): never {
    return new InboxSpec(change((spec as InboxSpec).#parts)) as never;
  }

  /** A new spec with one more column. */
  static #with(spec: AnyInboxSpec, col: Column, role: ColumnRole): never {
    return InboxSpec.#next(spec, (parts) => ({ ...parts, columns: [...parts.columns, describe(col, role)] }));
  }
}

function describe(col: Column, role: ColumnRole): ColumnDescription {
  return { name: col.name, key: col.name, role, generated: col.isGenerated, ...(col.sqlType !== undefined ? { type: col.sqlType } : {}) };
}

/**
 * Any table description: what a queue or a broker accepts. Read through the brand, not the
 * methods: a method's parameter carries the rules of its own spec (a `SpecError` where a role
 * is taken), so one spec type is not assignable to another through them.
 */
export interface AnyInboxSpec {
  readonly [specBrand]: { roles: readonly RoleMarker[]; columns: string; row: object };
  readonly description: InboxDescription;
  readonly table: string;
  readonly form: ClaimForm;
}
/** The role tuple of a spec. */
export type RolesOf<S> = S extends { readonly [specBrand]: { roles: infer R extends readonly RoleMarker[] } } ? R : never;
/**
 * The row a row-mode handler receives: every described column under its key, role columns typed
 * by their role (attempt `number`, lease `Date | string | null` …), id and data columns by what they hold.
 */
export type RowOf<S> = S extends { readonly [specBrand]: { row: infer Row extends object } } ? Row : never;
/** The data columns of a spec (those that play no role) under their keys, each with the type it holds (`unknown` unless given). */
export type DataOf<S> = S extends { readonly [specBrand]: { data: infer Data extends object } } ? Data : Record<never, never>;

/** The row when only the column names are known (an annotation such as `InboxSpec<[Attempt], "id" | "attempt">`). */
type ColumnsRow<C extends string> = { readonly [P in C]: unknown };
/** `Row` with one more column; flattened so a hover shows one object, not a chain of `&`. */
type WithColumn<Row extends object, N extends string, V> = Simplify<Row & { readonly [P in N]: V }>;
