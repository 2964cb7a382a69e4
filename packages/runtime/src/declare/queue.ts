import type {
  AnyInboxSpec,
  ErrorPlace,
  FormLabel,
  HasLeaseColumn,
  HasRole,
  IsAdvisoryForm,
  IsRowLockForm,
  InboxDescription,
  PayloadOf,
  RolesOf,
  RowOf,
  SpecError,
} from "@sqlinbox/core/internal";
import type { Transaction } from "kysely";
import {
  badFlowLimit,
  badTimeout,
  capNeedsRetryAfter,
  deadLetterGroupIsSource,
  deadLetterNeedsGroup,
  maxAttemptsNeedsAttempt,
  perKeyNeedsKey,
  perKeyOnAdvisory,
  refusedModes,
  sharedNeedsRowLock,
} from "../errors.js";
import type { FailurePolicy } from "./failure-policy.js";
import type { HandlerOutcome, RetryAfterOutcome } from "./outcome.js";
import { FORM_FACTS } from "../claim/form-facts.js";

/** Where a queue's dead letters go: another table (a new row there), or another group of the same table. */
export type DeadLetterTarget = { readonly table: InboxDescription } | { readonly group: string };

/** A queue's dead letter, declared with its `maxAttempts`. */
export interface DeadLetterDeclaration {
  readonly target: DeadLetterTarget;
  readonly maxAttempts?: number;
}

/** A queue's handler timeout (`InboxQueue.timeout`): how long a delivery may run, and the grace after it. */
export interface HandlerTimeout {
  /** After this many ms in the handler, `ctx.signal` aborts with a `Timeout`. */
  readonly ms: number;
  /** After the abort, how long the handler has to end before its row is released without it. */
  readonly graceMs: number;
}

/** The grace a timeout gets unless one is given: half the timeout, at most 30 s. */
export function defaultTimeoutGrace(ms: number): number {
  return Math.min(Math.ceil(ms / 2), 30_000);
}

/** The options one subscription runs with. */
export interface QueueOptions {
  /** The lease term in ms (whole seconds); unset: the broker's lease. */
  readonly lease?: number;
  readonly pollInterval: number;
  readonly workers: number;
  readonly batch: number;
  /** Handlers write through `ctx.tx`, committed with an ack (`.transactional()`). */
  readonly transactional?: boolean;
  /** Row lock: the rows of one claim share one transaction (`.sharedTransaction()`). */
  readonly sharedTransaction?: boolean;
  /** Where dead letters go, and after how many attempts a throw goes there. */
  readonly deadLetter?: DeadLetterDeclaration;
  /** What a handler's throw becomes; unset: `defaultOnError()`. */
  readonly onError?: FailurePolicy;
  /** What an undecodable payload becomes; unset: `defaultOnDecodeError`. */
  readonly onDecodeError?: FailurePolicy;
  /** How long a delivery may run (`.timeout(ms)`); unset: as long as it takes. */
  readonly timeout?: HandlerTimeout;
  /** Rows of one order key (or of the group) in work at once, across every process (`.maxInWorkPerKey(n)`); unset: 1 with an order key. */
  readonly maxInWorkPerKey?: number;
  /** At most this many rows of the subscription in work at once, across every process (`.maxInWork(n)`). */
  readonly maxInWork?: number;
  /** At most `max` deliveries start in any window of `perMs`, across every process (`.rateLimit(…)`). */
  readonly rateLimit?: RateLimit;
}

/** A rate limit: at most `max` deliveries start in any window of `perMs` milliseconds, across every process. */
export interface RateLimit {
  readonly max: number;
  readonly perMs: number;
}

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

// The queue itself where a mode is allowed, else the sentence: the rule sits on `this`, so the compiler's
// first line reads "The 'this' context of type … is not assignable to method's 'this' of type 'SpecError<"…">'".
type TransactionalThis<S extends AnyInboxSpec, Tx> = [Tx] extends [never]
  ? InboxQueue<S, Tx>
  : SpecError<"transactional() and sharedTransaction() exclude each other: a handler's writes cannot roll back alone inside a transaction other rows share">;

type SharedThis<S extends AnyInboxSpec, Tx> =
  IsRowLockForm<RolesOf<S>> extends true
    ? [Tx] extends [never]
      ? InboxQueue<S, Tx>
      : SpecError<"transactional() and sharedTransaction() exclude each other: a handler's writes cannot roll back alone inside a transaction other rows share">
    : SpecError<"sharedTransaction() needs a row-lock table (no lease column, no advisory key): the lease and advisory forms settle each row on its own">;

/** The delay rule's sentence for `S`'s table. */
export type DelayRule<S extends AnyInboxSpec> =
  `retryAfter needs a retryAfter column: this ${FormLabel<RolesOf<S>>} table has nowhere to store a time, and a delay is never served by holding the row; describe one with field.retryAfter() or .retryAfter(column("retry_after")), or return retry()`;

/** Whether `S`'s table can store a delay: a retryAfter column, or a lease column (where a delay is written). */
type StoresDelay<S extends AnyInboxSpec> = HasRole<RolesOf<S>, "retryAfter"> extends true ? true : HasLeaseColumn<RolesOf<S>>;

/**
 * A delay on a table with nowhere to store a time (row lock or advisory without a retryAfter
 * column): the `retryAfter` outcome's place in `OutcomeFor`, branded with the sentence the
 * compiler shows, so a handler or policy that can return one does not compile.
 */
export type DelayRefused<Rule extends string> = RetryAfterOutcome & SpecError<Rule>;

/**
 * The outcomes of a table without a place for a delay. Named after its rule, so that the compiler's
 * first line says it: "Type 'RetryAfterOutcome' is not assignable to type 'OutcomeWithoutDelay<"retryAfter needs …">'".
 */
export type OutcomeWithoutDelay<Rule extends string> = Exclude<HandlerOutcome, RetryAfterOutcome> | DelayRefused<Rule>;

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
export type WithoutDelay<Rule extends string, T> = T & { readonly "~delayRule"?: Rule };

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

type LeaseArgs<S extends AnyInboxSpec> =
  HasLeaseColumn<RolesOf<S>> extends true
    ? [ms: number]
    : [SpecError<'InboxQueue.lease needs a table with a lease column: describe one with .lease(column("locked_until")) or field.lease()'>];

type PerKeyArgs<S extends AnyInboxSpec> =
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

/** Rounds a lease up to whole seconds (at least one). */
export function wholeSeconds(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`a lease is a positive duration in ms, got ${ms}`);
  return Math.max(1, Math.ceil(ms / 1000)) * 1000;
}

function positiveWhole(what: string, n: number, place: ErrorPlace): number {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1) throw badFlowLimit(what, "a whole number above 0", n, place);
  return n;
}

function positiveInteger(what: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be a positive integer, got ${n}`);
  return n;
}

/**
 * A subscription's queue: which table (`spec`), which route name, and how it is consumed.
 * Immutable: every setter returns a new queue.
 *
 * @example
 * const queue = InboxQueue.of(RenderReport, "reports").lease(minutes(1)).workers(4)
 */
export class InboxQueue<S extends AnyInboxSpec = AnyInboxSpec, Tx = never> {
  readonly spec: S;
  readonly name: string;
  readonly options: QueueOptions;
  /** @internal phantom: how handlers use transactions (see `SharedRows`). */
  declare readonly "~tx"?: Tx;

  private constructor(spec: S, name: string, options: QueueOptions) {
    this.spec = spec;
    this.name = name;
    this.options = Object.freeze({ ...options });
    Object.freeze(this);
  }

  /** The queue of route `name` on the table `spec` describes. */
  static of<S extends AnyInboxSpec>(spec: S, name: string): InboxQueue<S> {
    if (typeof name !== "string" || name.length === 0) throw new RangeError("a queue needs a route name");
    return new InboxQueue(spec, name, { pollInterval: 1000, workers: 1, batch: 1 });
  }

  /** This subscription's lease term (whole seconds, rounded up); only on a table with a lease column. */
  lease(...args: LeaseArgs<S>): InboxQueue<S, Tx> {
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, lease: wholeSeconds(args[0] as number) });
  }

  /** How long to wait after a claim that came back short (default 1 s). */
  pollInterval(ms: number): InboxQueue<S, Tx> {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`pollInterval must be >= 0 ms, got ${ms}`);
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, pollInterval: ms });
  }

  /** Up to `n` deliveries in work at once (default 1). */
  workers(n: number): InboxQueue<S, Tx> {
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, workers: positiveInteger("workers", n) });
  }

  /**
   * Where failed rows go, and the attempt at which a row goes there at the latest. `maxAttempts`
   * is a cap: at that attempt a `retry()` or `retryAfter(ms)`, from a policy or the handler,
   * moves the row to the dead letter instead (logged with what it overrode). The destination is a
   * table described like this one (the same payload type) or `{ group: "name" }` of this table.
   * Declared together, so `maxAttempts` never exists without one.
   *
   * @example
   * InboxQueue.of(RenderReport, "reports").deadLetter(DeadReports, { maxAttempts: 5 })
   */
  deadLetter<D>(destination: D & DeadLetterDestination<S, D>, options: DeadLetterOptions<S> = {}): InboxQueue<S, Tx> {
    const source = this.spec.description;
    const place = { subscription: this.name, table: source.table };
    const maxAttempts = (options as { maxAttempts?: unknown }).maxAttempts;
    if (maxAttempts !== undefined) {
      if (source.attempt === undefined) throw maxAttemptsNeedsAttempt(place);
      positiveInteger("maxAttempts", maxAttempts as number);
    }
    let target: DeadLetterTarget;
    if ("description" in destination) target = { table: (destination as AnyInboxSpec).description };
    else {
      const group = (destination as { group: unknown }).group;
      if (source.group === undefined) throw deadLetterNeedsGroup(place);
      if (typeof group !== "string" || group.length === 0) throw new RangeError("a dead-letter group is a non-empty name");
      if (group === this.name) throw deadLetterGroupIsSource(group, place);
      target = { group };
    }
    const deadLetter: DeadLetterDeclaration = Object.freeze({ target, ...(maxAttempts !== undefined ? { maxAttempts: maxAttempts as number } : {}) });
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, deadLetter });
  }

  /**
   * What a handler's throw becomes: a pure function of the error, the attempt and the context.
   * Default: the dead letter at `maxAttempts`, otherwise a backoff with full jitter (1 s doubling, at most 1 h).
   * Whatever a policy returns, `maxAttempts` caps it (see `deadLetter`).
   */
  onError(policy: DelayChecked<S, FailurePolicy<OutcomeFor<S>>>): InboxQueue<S, Tx> {
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, onError: policy });
  }

  /**
   * What a payload that cannot be decoded (or fails its schema) becomes. Default: the dead letter
   * where declared, otherwise the row is kept, logged, and kept out of claims for a lease term.
   */
  onDecodeError(policy: DelayChecked<S, FailurePolicy<OutcomeFor<S>>>): InboxQueue<S, Tx> {
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, onDecodeError: policy });
  }

  /**
   * Fails a delivery that runs longer than `ms`: `ctx.signal` aborts with a `Timeout`, and the row
   * settles by the `onError` policy as a throw of that `Timeout` (by default a backoff, then the
   * dead letter at `maxAttempts`). A handler that ignores its signal does not keep the row: once
   * `graceMs` more have passed (default: half of `ms`, at most 30 s) the row is settled without it
   * (its transaction, lock or lease is let go) and what the handler returns later is discarded and
   * logged. A batch handler's timeout counts for the whole call and fails every row of it.
   *
   * @example
   * InboxQueue.of(RenderReport, "reports").timeout(seconds(30), { graceMs: seconds(5) })
   */
  timeout(ms: number, options: { readonly graceMs?: number } = {}): InboxQueue<S, Tx> {
    const place = { subscription: this.name, table: this.spec.description.table };
    if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < 1) throw badTimeout("ms", ms, place);
    const graceMs = options.graceMs ?? defaultTimeoutGrace(ms);
    if (typeof graceMs !== "number" || !Number.isSafeInteger(graceMs) || graceMs < 0) throw badTimeout("graceMs", graceMs, place);
    const timeout: HandlerTimeout = Object.freeze({ ms, graceMs });
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, timeout });
  }

  /**
   * Up to `n` rows of one order key in work at once, across every worker and process (default 1:
   * one at a time, in id order). A row is claimed only while it is among its key's first `n`
   * unprocessed rows in id order; among those, claim order (priority, then retryAfter, then id)
   * decides. On a group table, the same rule over the subscription's group (in place of fifo's one
   * at a time).
   *
   * @example
   * InboxQueue.of(LedgerJobs, "ledger").workers(8).maxInWorkPerKey(2)
   */
  maxInWorkPerKey(...args: PerKeyArgs<S>): InboxQueue<S, Tx> {
    const source = this.spec.description;
    if (!FORM_FACTS[source.form].ordersKeys) throw perKeyOnAdvisory(this.name, source.table);
    if (source.orderKey === undefined && source.group === undefined) throw perKeyNeedsKey(this.name, source.table);
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, maxInWorkPerKey: positiveInteger("maxInWorkPerKey", args[0] as number) });
  }

  /**
   * At most `n` rows of this subscription in work at once, summed over every process, held in the
   * database: a lease table counts the rows whose lease is ahead (a crashed process's rows count
   * until their lease expires); a row-lock table locks one of `n` slot rows in each delivery's
   * transaction, and an advisory table takes one of `n` slot locks on each delivery's session (a
   * crash gives them back at once). `workers(n)` still bounds each process.
   *
   * @example
   * InboxQueue.of(RenderReport, "reports").workers(8).maxInWork(5)
   */
  maxInWork<N extends number>(n: MaxInWorkArg<S, N>): InboxQueue<S, Tx> {
    const place = { subscription: this.name, table: this.spec.description.table };
    const spec = this.spec.description;
    // A lease table counts its rows in work by their deadlines: a delay must not be written there.
    if (FORM_FACTS[spec.form].storesDelayInHold && spec.retryAfter === undefined) throw capNeedsRetryAfter(place);
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, maxInWork: positiveWhole("maxInWork", n as number, place) });
  }

  /**
   * At most `max` deliveries start in any window of `perMs`, summed over every process and counted
   * in the database (sqlinbox's table `sqlinbox_slots`; create it with `createInboxTable`'s
   * `slotTable` option, `inboxTableSql(…, { slotTable: true })` or `sqlinbox ddl --slot-table`). A
   * subscription over its limit sleeps until the window frees a start.
   *
   * @example
   * InboxQueue.of(SendEmail, "emails").workers(4).rateLimit({ max: 10, perMs: 1000 })
   */
  rateLimit<M extends number, P extends number>(limit: RateLimitArg<M, P>): InboxQueue<S, Tx> {
    const place = { subscription: this.name, table: this.spec.description.table };
    const max = positiveWhole("rateLimit's max", limit.max as number, place);
    const perMs = limit.perMs as number;
    if (typeof perMs !== "number" || !Number.isFinite(perMs) || perMs <= 0) throw badFlowLimit("rateLimit's perMs", "a window above 0 ms", perMs, place);
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, rateLimit: Object.freeze({ max, perMs }) });
  }

  /** Claim up to `n` rows per statement (default 1). */
  batch(n: number): InboxQueue<S, Tx> {
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, batch: positiveInteger("batch", n) });
  }

  // Transactions: how a handler's writes commit.

  /**
   * Handlers get `ctx.tx`, a Kysely `Transaction<DB>`: an ack commits their writes together
   * with the settlement; any other outcome, or a throw, rolls them back. `DB` is the app's
   * database interface (the handler is declared apart from its broker, so it is named here).
   */
  transactional<DB = unknown>(this: TransactionalThis<S, Tx>): InboxQueue<S, Transaction<DB>> {
    const queue = this as unknown as InboxQueue<S, Tx>;
    if (queue.options.sharedTransaction === true) throw refusedModes(queue.name);
    return new InboxQueue<S, Transaction<DB>>(queue.spec, queue.name, { ...queue.options, transactional: true });
  }

  /**
   * Row lock: one transaction holds every row of a claim (up to `batch(n)`) and commits once
   * all of them settled, so one slow, crashed or failed row takes its neighbours back with it.
   * Default off: each row has its own transaction.
   */
  sharedTransaction(this: SharedThis<S, Tx>): InboxQueue<S, SharedRows> {
    const queue = this as unknown as InboxQueue<S, Tx>;
    if (queue.options.transactional === true) throw refusedModes(queue.name);
    if (!FORM_FACTS[queue.spec.description.form].sharesTransactions) throw sharedNeedsRowLock(queue.name, queue.spec.description.table);
    return new InboxQueue<S, SharedRows>(queue.spec, queue.name, { ...queue.options, sharedTransaction: true });
  }
}
