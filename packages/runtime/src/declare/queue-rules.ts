import type { AnyInboxSpec, FormLabel, HasLeaseColumn, HasRole, IsAdvisoryForm, PayloadOf, RolesOf, RowOf, SpecError } from "@sqlinbox/core/internal";
import type { HandlerOutcome, RetryAfterOutcome, SnoozeOutcome } from "./outcome.js";

// The compile-time rules of a queue's declaration: what each setter accepts for a table of spec `S`,
// each refusal a sentence (`SpecError`) the compiler shows; and what its handlers receive and return.

// A literal number the type system can judge: 0, a negative or (for a count) a fraction is refused with the sentence;
// a plain `number` is checked when the queue is declared.
type PositiveWhole<N extends number, Rule extends string> = number extends N ? N : `${N}` extends "0" | `-${string}` | `${string}.${string}` ? SpecError<Rule> : N;

type PositiveAmount<N extends number, Rule extends string> = number extends N ? N : `${N}` extends "0" | `-${string}` ? SpecError<Rule> : N;

type MaxInWorkRule = "maxInWork takes a whole number of rows above 0: at most that many rows of this subscription are in work at once, across every process";

type RateMaxRule = "rateLimit's max is a whole number of starts above 0: at most that many deliveries start in any window of perMs";

type RatePerMsRule = "rateLimit's perMs is a window above 0 ms: at most max deliveries start in any window that long";

/**
 * `maxInWork`'s argument: a lease table counts its rows in work by their deadlines, so a delay needs
 * a retryAfter column of its own (a delay written into the lease column would count as work).
 */
export type MaxInWorkArg<S extends AnyInboxSpec, N extends number> =
  HasLeaseColumn<RolesOf<S>> extends true
    ? HasRole<RolesOf<S>, "retryAfter"> extends true
      ? PositiveWhole<N, MaxInWorkRule>
      : SpecError<'maxInWork on a lease table needs a retryAfter column: the cap counts rows whose lease is ahead, and without one a delayed row waits in its lease column and counts as in work; describe one with field.retryAfter() or .retryAfter(column("retry_after"))'>
    : PositiveWhole<N, MaxInWorkRule>;

/** `rateLimit`'s argument: literal numbers are judged at compile time, others when the queue is declared. */
export interface RateLimitArg<M extends number, P extends number> {
  readonly max: PositiveWhole<M, RateMaxRule>;
  readonly perMs: PositiveAmount<P, RatePerMsRule>;
}

/**
 * How a queue's handlers use transactions, at the type level: `never` (each delivery on its own),
 * `Transaction<DB>` (`.transactional<DB>()`: `ctx.tx`), or `SharedRows` (`.sharedTransaction()`).
 */
export interface SharedRows {
  readonly "~sharedRows": true;
}

/** The delay rule's sentence for `S`'s table. */
type DelayRule<S extends AnyInboxSpec> =
  `retryAfter needs a retryAfter column: this ${FormLabel<RolesOf<S>>} table has nowhere to store a time, and a delay is never served by holding the row; describe one with field.retryAfter() or .retryAfter(column("retry_after")), or return retry()`;

/** Whether `S`'s table can store a delay: a retryAfter column, or a lease column (where a delay is written). */
type StoresDelay<S extends AnyInboxSpec> = HasRole<RolesOf<S>, "retryAfter"> extends true ? true : HasLeaseColumn<RolesOf<S>>;

/**
 * A delay on a table with nowhere to store a time (row lock or advisory without a retryAfter
 * column): the `retryAfter` outcome's place in `OutcomeFor`, branded with the sentence the
 * compiler shows, so a handler or policy that can return one does not compile.
 */
type DelayRefused<Rule extends string> = RetryAfterOutcome & SpecError<Rule>;

/**
 * The outcomes of a table without a place for a delay (neither `retryAfter` nor `snooze`, which
 * stores its delay the same way). Named after its rule, so that the compiler's
 * first line says it: "Type 'RetryAfterOutcome' is not assignable to type 'OutcomeWithoutDelay<"retryAfter needs …">'".
 */
export type OutcomeWithoutDelay<Rule extends string> = Exclude<HandlerOutcome, RetryAfterOutcome | SnoozeOutcome> | DelayRefused<Rule>;

/**
 * The outcomes a table can store: a delay needs a retryAfter column or a lease column (where a
 * delay is written); elsewhere a handler or policy returning `retryAfter` does not compile.
 */
export type OutcomeFor<S extends AnyInboxSpec> = StoresDelay<S> extends true ? HandlerOutcome : OutcomeWithoutDelay<DelayRule<S>>;

/**
 * `T` on a table that cannot store a delay, named after the delay rule (`Rule`) so that the
 * compiler's first line says it: a handler that returns `retryAfter` there is "not assignable to
 * parameter of type 'WithoutDelay<"retryAfter needs a retryAfter column: …", …>'".
 */
type WithoutDelay<Rule extends string, T> = T & { readonly "~delayRule"?: Rule };

/** `T` as it is where `S`'s table stores delays, and `WithoutDelay<…>` where it cannot. */
export type DelayChecked<S extends AnyInboxSpec, T> = StoresDelay<S> extends true ? T : WithoutDelay<DelayRule<S>, T>;

type SamePayload<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** The rule a dead-letter destination must follow: the same payload type, or a group of a table with a group column. */
export type DeadLetterDestination<S extends AnyInboxSpec, D> = D extends AnyInboxSpec
  ? SamePayload<PayloadOf<RolesOf<D>>, PayloadOf<RolesOf<S>>> extends true
    ? D
    : SpecError<"the dead-letter table's payload type differs from this queue's: describe its payload column with the same type">
  : D extends { readonly group: string }
    ? HasRole<RolesOf<S>, "group"> extends true
      ? D
      : SpecError<'a dead-letter group needs a group column: describe one with .group(column("grp")) or field.group(), or give a table'>
    : SpecError<"a dead-letter destination is a table description or { group: name }">;

/** `maxAttempts` only where the claim counts attempts. */
export type DeadLetterOptions<S extends AnyInboxSpec> =
  HasRole<RolesOf<S>, "attempt"> extends true
    ? { readonly maxAttempts?: number }
    : { readonly maxAttempts?: SpecError<'maxAttempts needs an attempt column: describe one with .attempt(column("attempt")) or field.attempt()'> };

/**
 * What a publish to a spec's table writes: the payload, or in row mode (no payload column) some of
 * the row's columns, typed as described (generated ones are left to the database).
 */
export type PayloadOfSpec<S extends AnyInboxSpec> = [PayloadOf<RolesOf<S>>] extends [never] ? Partial<RowOf<S>> : PayloadOf<RolesOf<S>>;

/**
 * What a spec's handlers receive: the decoded payload, or in row mode the row itself, every
 * described column typed by its role or by what it holds (`RowOf`).
 */
export type DeliveredOf<S extends AnyInboxSpec> = [PayloadOf<RolesOf<S>>] extends [never] ? RowOf<S> : PayloadOf<RolesOf<S>>;

export type LeaseArgs<S extends AnyInboxSpec> =
  HasLeaseColumn<RolesOf<S>> extends true
    ? [ms: number]
    : [SpecError<'InboxQueue.lease needs a table with a lease column: describe one with .lease(column("locked_until")) or field.lease()'>];

export type PerKeyArgs<S extends AnyInboxSpec> =
  IsAdvisoryForm<RolesOf<S>> extends true
    ? [
        SpecError<"maxInWorkPerKey needs a lease or row-lock table: an advisory key already runs the rows that share it one at a time, so drop maxInWorkPerKey or describe a lease column instead of the advisory key">,
      ]
    : HasRole<RolesOf<S>, "orderKey"> extends true
      ? [n: number]
      : HasRole<RolesOf<S>, "group"> extends true
        ? [n: number]
        : [
            SpecError<"maxInWorkPerKey needs an order key or a group column: describe one with field.orderKey(…) or .orderKey(column(…)); without one there is no key to count rows by">,
          ];

/**
 * `retain`'s windows: `done` only on a table that keeps handled rows (a processedAt column); on
 * one whose ack deletes the row it is the sentence the compiler shows.
 */
export interface RetainArg<S extends AnyInboxSpec> {
  readonly done?: HasRole<RolesOf<S>, "processedAt"> extends true
    ? number
    : SpecError<"retain({ done }) needs a processedAt column: this table's ack deletes the row, so no handled row is kept to prune; describe one with field.processedAt(), or drop done">;
  readonly deadLettered?: number;
}
