import { buildDescription, type DescriptionParts } from "./build-description.js";
import type { Column } from "./column.js";
import type { ColumnDescription, InboxDescription } from "./description.js";
import type {
  AdvisoryLock, Attempt, ClaimForm, ColumnRole, Fifo, FormOf, Group, HasRole, Lease, Payload, Priority, ProcessedAt,
  RetryAfter, RoleMarker, RoleName, TemplatePlaceholders,
} from "./roles.js";
import type { FirstError, Require } from "./type-errors.js";
import type { PayloadType } from "./payload-type.js";

type NotTwice<R extends readonly RoleMarker[], Role extends RoleName> = Require<
  HasRole<R, Role> extends true ? false : true,
  `the ${Role} role is already played by a column: a table has at most one ${Role} column, so describe this one with .data(…) or drop it`
>;
type NewColumn<C extends string, N extends string> = Require<
  [N] extends [C] ? false : true,
  `column "${N}" is already described: describe each column once`
>;
type Without<R extends readonly RoleMarker[], Role extends RoleName, Message extends string> =
  Require<HasRole<R, Role> extends true ? false : true, Message>;
type LeaseOrAdvisory = "a lease column and an advisory key exclude each other: keep the lease column or the advisory key, not both";
type FifoWithAdvisory = "fifo and an advisory key exclude each other: an advisory key already keeps rows that share it apart, so drop one of them";

const specBrand: unique symbol = Symbol("sqlinbox.InboxSpec");

/**
 * A table description, built by hand (`InboxSpec.table(…)…`) or by `defineInbox`.
 * Its type carries the role tuple, so `InboxSpec<[Attempt, Lease<Date>, Payload<Report>]>`
 * says at compile time which form the table uses and what its handlers receive.
 * `C` is the union of described column names, `K` of the keys a row object carries.
 *
 * Immutable: every method returns a new frozen spec.
 *
 * @example
 * const RenderReport = InboxSpec.table("report_jobs", column("id").generated())
 *   .attempt(column("attempt").generated())
 *   .lease(column("locked_until"))
 *   .payload(column("payload"), payloadOf<Report>());
 * // RenderReport: InboxSpec<[Attempt, Lease<Date>, Payload<Report>], "id" | "attempt" | "locked_until" | "payload">
 */
// Covariant by declaration: a spec that knows more columns is usable where fewer are named, so
// `const s: InboxSpec<[Attempt, Lease<Date>, Payload<Report>]> = InboxSpec.table(…)…` compiles.
// The compiler cannot verify it because the methods' rules are conditional types of C; they only
// ever refuse more on a wider C (`string` holds every name), so the annotation loses no check.
// @ts-expect-error TS2636: variance of conditional rule types is not measurable
export class InboxSpec<out R extends readonly RoleMarker[] = readonly RoleMarker[], out C extends string = string, out K extends string = C> {
  declare readonly [specBrand]: { roles: R; columns: C; keys: K };
  /** The plain description the statements and the runtime read. */
  readonly description: InboxDescription;
  readonly #parts: DescriptionParts;

  private constructor(parts: DescriptionParts) {
    this.description = buildDescription(parts);
    this.#parts = parts;
    Object.freeze(this);
  }

  /** Starts a description: the table and its id column. */
  static table<const N extends string>(table: string, id: Column<N>): InboxSpec<[], N> {
    return new InboxSpec({ table, columns: [describe(id, "id")] });
  }

  /** @internal Used by `defineInbox`: the parts are checked exactly as the builder's. */
  static fromParts<R extends readonly RoleMarker[], C extends string, K extends string>(parts: DescriptionParts): InboxSpec<R, C, K> {
    return new InboxSpec(parts);
  }

  get table(): string {
    return this.description.table;
  }
  get form(): FormOf<R> {
    return this.description.form as FormOf<R>;
  }

  /** The attempt column: counted at each claim; handlers read it as `keys.attempt`. */
  attempt<N extends string>(col: Column<N> & FirstError<[NotTwice<R, "attempt">, NewColumn<C, N>]>): InboxSpec<[...R, Attempt], C | N, K | N> {
    return this.#with(col, "attempt");
  }

  /** The lease column: selects the lease form. Its deadline is the token of ownership. */
  lease<N extends string>(
    col: Column<N> & FirstError<[NotTwice<R, "lease">, NewColumn<C, N>, Without<R, "advisoryLock", LeaseOrAdvisory>]>,
  ): InboxSpec<[...R, Lease<Date>], C | N, K | N> {
    return this.#with(col, "lease");
  }

  /**
   * The payload column: the handler receives the decoded payload. Its type comes from
   * the second argument: `payloadOf<Report>()`, or a Standard Schema that also validates it.
   */
  payload<N extends string, T = unknown>(
    col: Column<N> & FirstError<[NotTwice<R, "payload">, NewColumn<C, N>]>,
    type?: PayloadType<T>,
  ): InboxSpec<[...R, Payload<T>], C | N, K | N> {
    return new InboxSpec({ ...this.#parts, columns: [...this.#parts.columns, describe(col, "payload")], payloadType: type }) as never;
  }

  /** The column that hides a row until a time (`HandlerOutcome.retryAfter`); claim order uses it. */
  retryAfter<N extends string>(col: Column<N> & FirstError<[NotTwice<R, "retryAfter">, NewColumn<C, N>]>): InboxSpec<[...R, RetryAfter], C | N, K | N> {
    return this.#with(col, "retryAfter");
  }

  /** The column ack marks instead of deleting the row. */
  processedAt<N extends string>(col: Column<N> & FirstError<[NotTwice<R, "processedAt">, NewColumn<C, N>]>): InboxSpec<[...R, ProcessedAt], C | N, K | N> {
    return this.#with(col, "processedAt");
  }

  /** The group column: a subscription name selects a group. */
  group<N extends string>(col: Column<N> & FirstError<[NotTwice<R, "group">, NewColumn<C, N>]>): InboxSpec<[...R, Group], C | N, K | N> {
    return this.#with(col, "group");
  }

  /** Smaller is claimed first. */
  priority<N extends string>(col: Column<N> & FirstError<[NotTwice<R, "priority">, NewColumn<C, N>]>): InboxSpec<[...R, Priority], C | N, K | N> {
    return this.#with(col, "priority");
  }

  /** A column that plays no role: read by row-mode handlers, named by advisory keys, written by publishes. */
  data<N extends string>(col: Column<N> & NewColumn<C, N>): InboxSpec<R, C | N, K | N> {
    return this.#with(col, "data");
  }

  /**
   * With a group: one row of a group in work at a time, in order.
   * The rules sit on `this`, so a broken one reads "The 'this' context … is not assignable to … SpecError<"…">".
   */
  fifo(
    this: InboxSpec<R, C, K> & FirstError<[
      Require<HasRole<R, "group">, "fifo needs a group column: describe one with .group(column(…)) before .fifo()">,
      Without<R, "advisoryLock", FifoWithAdvisory>,
      Without<R, "fifo", "fifo is already set: call .fifo() once">,
    ]>,
  ): InboxSpec<[...R, Fifo], C, K> {
    return new InboxSpec({ ...this.#parts, fifo: true });
  }

  /**
   * An advisory key template (`"report-{customer_id}"`): selects the advisory form.
   * Its placeholders name described columns; describe them before calling this.
   */
  advisoryLock<const T extends string>(
    template: T & FirstError<[
      Without<R, "lease", LeaseOrAdvisory>,
      Without<R, "advisoryLock", "the advisory key is already set: a table has one key template, so call .advisoryLock(…) once">,
      Without<R, "fifo", FifoWithAdvisory>,
      Require<[Exclude<TemplatePlaceholders<T>, C>] extends [never] ? true : false,
        `the advisory key names a column that is not described: describe ${Exclude<TemplatePlaceholders<T>, C> & string} first (with .data(column(…)) if it plays no role)`>,
    ]>,
  ): InboxSpec<[...R, AdvisoryLock<T>], C, K> {
    return new InboxSpec({ ...this.#parts, advisoryLock: template });
  }

  /** A new spec with one more column; the caller's signature states the type it becomes. */
  #with(col: Column, role: ColumnRole): never {
    return new InboxSpec({ ...this.#parts, columns: [...this.#parts.columns, describe(col, role)] }) as never;
  }
}

function describe(col: Column, role: ColumnRole): ColumnDescription {
  return { name: col.name, key: col.name, role, generated: col.isGenerated };
}

/**
 * Any table description: what a queue or a broker accepts. Read through the brand, not the
 * methods: a method's parameter carries the rules of its own spec (a `SpecError` where a role
 * is taken), so one spec type is not assignable to another through them.
 */
export interface AnyInboxSpec {
  readonly [specBrand]: { roles: readonly RoleMarker[]; columns: string; keys: string };
  readonly description: InboxDescription;
  readonly table: string;
  readonly form: ClaimForm;
}
/** The role tuple of a spec. */
export type RolesOf<S> = S extends { readonly [specBrand]: { roles: infer R extends readonly RoleMarker[] } } ? R : never;
/** The row object a row-mode handler receives. */
export type RowOf<S> = S extends { readonly [specBrand]: { keys: infer K extends string } } ? { readonly [P in K]: unknown } : never;
