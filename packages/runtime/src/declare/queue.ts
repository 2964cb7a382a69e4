import { FORM_FACTS, type AnyInboxSpec, type IsRowLockForm, type RolesOf, type SpecError } from "@sqlinbox/core/internal";
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
import {
  checkRetention,
  positiveInteger,
  positiveWhole,
  wholeSeconds,
  defaultTimeoutGrace,
  type DeadLetterDeclaration,
  type DeadLetterTarget,
  type HandlerTimeout,
  type QueueOptions,
  type Retention,
} from "./queue-options.js";
import type {
  DeadLetterDestination,
  DeadLetterOptions,
  DelayChecked,
  LeaseArgs,
  MaxInWorkArg,
  OutcomeFor,
  PerKeyArgs,
  RateLimitArg,
  RetainArg,
  SharedRows,
} from "./queue-rules.js";

// The queue's options and compile-time rules live beside it (`queue-options.ts`, `queue-rules.ts`); what the other
// folders and the package's root name of them, they import from here, with the queue.
export {
  wholeSeconds,
  type DeadLetterDeclaration,
  type DeadLetterTarget,
  type HandlerTimeout,
  type QueueOptions,
  type RateLimit,
  type Retention,
} from "./queue-options.js";
export type { DeliveredOf, MaxInWorkArg, OutcomeFor, PayloadOfSpec, RateLimitArg, RetainArg } from "./queue-rules.js";

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
  deadLetter<D>(destination: DeadLetterDestination<S, D> & D, options: DeadLetterOptions<S> = {}): InboxQueue<S, Tx> {
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
    if (this.options.retain !== undefined) checkRetention(this.options.retain, source, deadLetter, place);
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

  /**
   * How long handled rows and dead letters are kept: every app that runs this subscription deletes
   * them once they are older than their window, judged on the database's time, in small batches,
   * with no leader (two apps pruning together never delete a row twice nor wait on each other's
   * claims). `done` counts from a row's processedAt (a table that keeps handled rows); `deadLettered`
   * from the processedAt column of the dead-letter table, which the move stamps. On a group table
   * only this subscription's group is pruned. A window left out keeps those rows for ever.
   *
   * @example
   * InboxQueue.of(RenderReport, "reports").deadLetter(DeadReports, { maxAttempts: 5 }).retain({ done: hours(24), deadLettered: days(30) })
   */
  retain(windows: RetainArg<S>): InboxQueue<S, Tx> {
    const place = { subscription: this.name, table: this.spec.description.table };
    const retain: Retention = Object.freeze({ ...(windows as Retention) });
    checkRetention(retain, this.spec.description, this.options.deadLetter, place);
    return new InboxQueue<S, Tx>(this.spec, this.name, { ...this.options, retain });
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
