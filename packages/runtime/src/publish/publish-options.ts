/**
 * The types a routed broker's publish is checked by: the options of a publish, typed by the route's
 * table (a column the table does not have does not compile), how a published name finds its route,
 * and what a route may be on an engine.
 */
import type { AnyInboxSpec, DataOf, HasLeaseColumn, HasRole, IsRowLockForm, RoleMarker, RolesOf, SpecError } from "@sqlinbox/core/internal";
import type { Engine, EngineSupports } from "@sqlinbox/kysely-dialects";
import type { Kysely, Transaction } from "kysely";
import type { PayloadOfSpec } from "../declare/queue.js";
import type { MessageHeaderValues } from "./publish-rows.js";

/**
 * Options of a publish, as the runtime reads them; on a routed broker each is typed by the route's
 * table (`PublishOptionsFor`), and one the table has no column for does not compile.
 */
export interface PublishOptions<DB = unknown> {
  /** Publish inside the caller's own Kysely transaction (or through another Kysely instance). */
  readonly via?: Kysely<DB> | Transaction<DB>;
  /** Metadata for the headers column (a W3C `traceparent`, …), read by handlers as `keys.headers`. */
  readonly headers?: MessageHeaderValues;
  /** The priority column's value (lower is claimed first). */
  readonly priority?: number;
  /** No claim before this time: stored in the retryAfter column, else in the lease column. */
  readonly runAt?: Date;
  /** No claim before this many ms from now, on the database's clock (see `AppInfo.leaseClock`): `runAt` by another name. */
  readonly delay?: number;
  /** Data columns, by key. */
  readonly columns?: Readonly<Record<string, unknown>>;
  /** The dedup key: a row holding it already means nothing is inserted, and its id comes back with `created: false`. */
  readonly key?: string;
  /**
   * Debounce: a row already holding the key takes this publish's payload, run-at, priority and data
   * columns unless it is in work (`replaced` says which). Lease tables with a retryAfter column.
   */
  readonly replace?: boolean;
}

/** Options of `publishMany`: a publish's, with one key per payload and the data columns for all rows or per payload. */
export interface PublishManyOptions<DB = unknown> extends Omit<PublishOptions<DB>, "key" | "columns"> {
  readonly columns?: Readonly<Record<string, unknown>> | ((payload: never, index: number) => Readonly<Record<string, unknown>>);
  /** One dedup key per payload, in order (`undefined`: that row has none). */
  readonly keys?: readonly (string | undefined)[];
}

export type Routes = Record<string, AnyInboxSpec>;

/** The prefix routes of `R` that take `N` (`"reports.*"` takes `"reports.daily"`). */
type PrefixRoutesOf<R extends Routes, N extends string> = {
  [K in keyof R & string]: K extends `${infer P}*` ? (N extends `${P}${string}` ? K : never) : never;
}[keyof R & string];
/**
 * The spec route `N` goes to: its exact route, else the prefix routes that take it (their union:
 * the longest wins at run time), `never` when the broker's type knows none.
 */
export type RouteSpecOf<R extends Routes, N extends string> = N extends keyof R ? R[N] : R[PrefixRoutesOf<R, N>];

/**
 * A publish's name compiles when the broker's type routes it (exactly or by a prefix route), or
 * when it is a `string` only known at run time (then an unrouted name fails with `NoRoute`).
 */
export type KnownRoute<R extends Routes, N extends string> = string extends N
  ? unknown
  : N extends keyof R
    ? unknown
    : [PrefixRoutesOf<R, N>] extends [never]
      ? SpecError<"this broker's type routes no such name: declare it with .route(spec, name) and publish on the broker .route() returns">
      : unknown;

type When<Has extends boolean, Option, Message extends string> = Has extends true ? Option : { readonly [K in keyof Option]?: SpecError<Message> };
type HeadersPart<R extends readonly RoleMarker[]> = When<
  HasRole<R, "headers">,
  { readonly headers?: MessageHeaderValues },
  "publish(…, { headers }) needs a headers column: describe one with field.headers() or .headers(column(…))"
>;
type PriorityPart<R extends readonly RoleMarker[]> = When<
  HasRole<R, "priority">,
  { readonly priority?: number },
  "publish(…, { priority }) needs a priority column: describe one with field.priority() or .priority(column(…))"
>;
type RunAtPart<R extends readonly RoleMarker[]> = When<
  HasRole<R, "retryAfter"> extends true ? true : HasLeaseColumn<R>,
  { readonly runAt?: Date; readonly delay?: number },
  "publish(…, { runAt, delay }) needs somewhere to store the time: a retryAfter column (field.retryAfter()) or a lease column"
>;
type KeyPart<R extends readonly RoleMarker[], Many extends boolean> = When<
  HasRole<R, "key">,
  Many extends true ? { readonly keys?: readonly (string | undefined)[] } : { readonly key?: string },
  "a publish with a key needs a dedup key column: describe one with field.key() or .key(column(…))"
>;
/**
 * `replace: true` debounces the row that holds the publish's key, so it comes with the key: without one,
 * each publish would insert a new row while the caller believes it debounces. A publish that sets
 * `replace: true` and no key fails to compile: "Property 'key' is missing … but required in type 'KeyForReplace'".
 */
interface KeyForReplace {
  readonly key: string;
  readonly replace?: boolean;
}
/** `KeyForReplace` for `publishMany`: `replace: true` comes with the rows' `keys`. */
interface KeysForReplace {
  readonly keys: readonly (string | undefined)[];
  readonly replace?: boolean;
}
type ReplaceWithKey<Many extends boolean> =
  | (Many extends true ? KeysForReplace : KeyForReplace)
  | ((Many extends true ? { readonly keys?: readonly (string | undefined)[] | undefined } : { readonly key?: string | undefined }) & {
      readonly replace?: false | SpecError<"replace: true debounces the row that holds the publish's key: give the publish a key (key: …; keys on publishMany)">;
    });
type ReplacePart<R extends readonly RoleMarker[], Many extends boolean> =
  HasRole<R, "key"> extends true
    ? HasLeaseColumn<R> extends true
      ? HasRole<R, "retryAfter"> extends true
        ? ReplaceWithKey<Many>
        : ReplaceRefused
      : ReplaceRefused
    : ReplaceRefused;
type ReplaceRefused = {
  readonly replace?: SpecError<"replace needs a dedup key column, a lease column (it tells a row in work) and a retryAfter column (it holds the run-at)">;
};
export type DataColumns<S> = { readonly [K in keyof DataOf<S>]?: DataOf<S>[K] };
type ColumnsPart<S extends AnyInboxSpec, Many extends boolean> = [keyof DataOf<S>] extends [never]
  ? { readonly columns?: SpecError<"publish(…, { columns }) sets data columns: this table describes none (field.data() or .data(column(…)))"> }
  : { readonly columns?: DataColumns<S> | (Many extends true ? (payload: PayloadOfSpec<S>, index: number) => DataColumns<S> : never) };

/** Every option a publish to a table of spec `S` takes, each typed by the table; every option, loosely typed, when the broker's type does not know the route (a name given as a `string`). */
type SpecOptions<S, Many extends boolean> = [S] extends [never]
  ? Omit<Many extends true ? PublishManyOptions : PublishOptions, "via">
  : S extends AnyInboxSpec
    ? HeadersPart<RolesOf<S>> & PriorityPart<RolesOf<S>> & RunAtPart<RolesOf<S>> & KeyPart<RolesOf<S>, Many> & ReplacePart<RolesOf<S>, Many> & ColumnsPart<S, Many>
    : unknown;
/** The options of a publish to route `N`: each only where its table has a column for it. */
export type PublishOptionsFor<R extends Routes, N extends string, DB> = { readonly via?: Kysely<DB> | Transaction<DB> } & SpecOptions<RouteSpecOf<R, N>, false>;
/** The options of a `publishMany` to route `N`. */
export type PublishManyOptionsFor<R extends Routes, N extends string, DB> = { readonly via?: Kysely<DB> | Transaction<DB> } & SpecOptions<RouteSpecOf<R, N>, true>;

/** A row-lock table cannot be routed on a broker whose engine has no row locks (SQLite). */
export type RouteAllowed<S extends AnyInboxSpec, E extends Engine> = [EngineSupports<E, "rowLock">] extends [false]
  ? IsRowLockForm<RolesOf<S>> extends true
    ? SpecError<'SQLite has no row locks: a row-lock table cannot be routed on a SQLite broker; give the table a lease column (.lease(column("locked_until"))) or an advisory key (.advisoryLock("…"))'>
    : unknown
  : unknown;
/** `listenNotify()` compiles unless the URL names an engine without LISTEN/NOTIFY (every engine but Postgres). */
export type ListenNotifyAllowed<E extends Engine> = [true] extends [EngineSupports<E, "listenNotify">]
  ? unknown
  : SpecError<"listenNotify() needs Postgres (LISTEN/NOTIFY): on SQLite and MySQL/MariaDB other processes see a publish at their next poll">;
/** A route name: one the broker's type knows, or any `string` known only at run time. */
export type RouteName<R extends Routes> = (keyof R & string) | (string & Record<never, never>);

/** A publish's payload type for route `N`: the route's payload when the broker's type knows it (exact or by prefix). */
export type PublishPayload<R extends Routes, N extends string> = [RouteSpecOf<R, N>] extends [never] ? unknown : PayloadOfSpec<RouteSpecOf<R, N>>;
