import type { HasRole, IsRowLockForm, Lease, ProgressOf, ResultOf, RoleMarker, RoleName, SpecError } from "@sqlinbox/core/internal";
import type { Transaction } from "kysely";
import { notTransactional, progressNotShown, unknownContextKey } from "../errors.js";
import type { AckOutcome } from "./outcome.js";
import type { AnyTransaction } from "../drivers/database.js";

const keyBrand: unique symbol = Symbol("sqlinbox.ContextKey");

/**
 * A typed key into a delivery's context. `Needs` is the role the table must have for the
 * key to exist (`never`: every table has it), so `ctx.get(keys.attempt)` only compiles on a
 * table with an attempt column.
 */
export interface ContextKey<Name extends string = string, Value = unknown, Needs extends RoleName = RoleName> {
  readonly name: Name;
  // Required (and undefined): an optional phantom would make TypeScript, under exactOptionalPropertyTypes,
  // end a broken rule's message with a misleading "Consider adding 'undefined'".
  readonly [keyBrand]: { value: Value; needs: Needs } | undefined;
}

function key<Name extends string, Value, Needs extends RoleName = never>(name: Name): ContextKey<Name, Value, Needs> {
  return Object.freeze({ name, [keyBrand]: undefined });
}

/** The context keys a handler can read. */
export const keys = Object.freeze({
  /** The attempt the claim counted: 1 on the first delivery. Needs an attempt column. */
  attempt: key<"attempt", number, "attempt">("attempt"),
  /** The lease deadline this delivery currently holds (moves with each extension). Needs a lease column. */
  leaseDeadline: key<"leaseDeadline", Date, Lease["role"]>("leaseDeadline"),
  /** The row's id. */
  id: key<"id", unknown>("id"),
  /** The metadata its publish carried (`publish(…, { headers })`): `{}` when none. Needs a headers column. */
  headers: key<"headers", Readonly<Record<string, string>>, "headers">("headers"),
  /** The subscription's name. */
  subscription: key<"subscription", string>("subscription"),
  /** The table's name. */
  table: key<"table", string>("table"),
});

type ValueOfKey<K> = K extends ContextKey<string, infer V, RoleName> ? V : never;
type NeedsOfKey<K> = K extends ContextKey<string, unknown, infer N> ? N : never;

/** `unknown` when the table has what `K` needs, otherwise a readable error. */
export type KeyAvailable<R extends readonly RoleMarker[], K extends ContextKey> = [NeedsOfKey<K>] extends [never]
  ? unknown
  : HasRole<R, NeedsOfKey<K>> extends true
    ? unknown
    : SpecError<`keys.${K["name"]} needs a column with the ${NeedsOfKey<K> & string} role: describe one on the table (.${NeedsOfKey<K> & string}(column("…")) or field.${NeedsOfKey<K> & string}())`>;

/** What `ctx.ack(result)` takes: the result column's type, or the sentence saying what the table lacks. */
export type ResultArg<R extends readonly RoleMarker[]> =
  HasRole<R, "result"> extends true
    ? ResultOf<R>
    : SpecError<'ctx.ack(result) needs a result column: describe one with .result(column("result"), resultOf<T>()) after .processedAt(…), or return HandlerOutcome.ack() without a result'>;

/** What `ctx.progress(value)` takes: the progress column's type where other sessions can see it, or the sentence saying why not. */
export type ProgressArg<R extends readonly RoleMarker[]> =
  HasRole<R, "progress"> extends true
    ? IsRowLockForm<R> extends true
      ? SpecError<"ctx.progress cannot show progress on a row-lock table: the claim holds the row in an open transaction, so no other session sees a write before the settlement commits; use a lease column or an advisory key">
      : ProgressOf<R>
    : SpecError<'ctx.progress needs a progress column: describe one with .progress(column("progress"), progressOf<T>())'>;

/**
 * What a handler receives beside its payload, typed by the table's role tuple `R`.
 */
export interface InboxContext<R extends readonly RoleMarker[] = readonly RoleMarker[]> {
  /**
   * Aborts when the delivery's lease is lost, the shutdown grace period ends, or the delivery runs
   * past its queue's `.timeout(ms)` (the reason is then a `Timeout`).
   */
  readonly signal: AbortSignal;
  readonly subscription: string;
  readonly table: string;
  readonly id: unknown;
  /** Reads a context value; only compiles when the table has the column the key needs. */
  get<K extends ContextKey>(key: K & KeyAvailable<R, K>): ValueOfKey<K>;
  /** The time leases and due times are judged on: the app's clock corrected to the database's (see `AppInfo.leaseClock`; paused in `TestApp.start`). */
  now(): Date;
  /** Sleeps on the app's clock; rejects when `signal` aborts. Use it for waits a test should skip. */
  sleep(ms: number): Promise<void>;
  /**
   * An ack that writes `result` (as JSON) into the table's result column, in the ack's own statement:
   * `return ctx.ack(report)`. On the lease form it is written only while the lease is held (a lost
   * lease writes no result); on the row-lock form in the claim's transaction; on the advisory form under the key.
   * Only compiles on a table with a result column, typed by it.
   */
  ack(result: ResultArg<R>): AckOutcome;
  /**
   * Writes `value` (as JSON) into the table's progress column now, where other sessions (a job
   * handle) can read it: fenced by the lease's token on the lease form (rejects with `LeaseLost`
   * when the lease is gone), under the key on the advisory form. Does not compile on a row-lock table.
   */
  progress(value: ProgressArg<R>): Promise<void>;
  /** @internal phantom: the role tuple (required, for the reason given on `ContextKey`). */
  readonly "~roles": R | undefined;
}

/**
 * The context of a transactional queue's handler (`.transactional<DB>()`): `tx` is the
 * transaction its writes go through, committed with an ack, rolled back by any other outcome.
 */
interface TransactionalContext<R extends readonly RoleMarker[] = readonly RoleMarker[], DB = unknown> extends InboxContext<R> {
  readonly tx: Transaction<DB>;
}

/**
 * What a batch handler receives beside its payloads: the context of each row (`rows[i]`, in
 * the order of the payloads) and what the rows share.
 */
export interface BatchContext<R extends readonly RoleMarker[] = readonly RoleMarker[]> {
  /** Aborts when any row's hold is lost, the shutdown grace period ends, or the call runs past its queue's timeout. */
  readonly signal: AbortSignal;
  readonly subscription: string;
  readonly table: string;
  /** Each row's own context: `ctx.rows[i].get(keys.attempt)`. */
  readonly rows: readonly InboxContext<R>[];
  now(): Date;
  sleep(ms: number): Promise<void>;
}

/** `ctx.tx` outside a transactional queue: any use of it reads as the sentence. */
interface OutsideTransaction {
  readonly tx: SpecError<"ctx.tx needs a transactional queue: add .transactional() to the queue (InboxQueue.of(…).transactional<DB>())">;
}

/** The context a queue's handler receives: `tx` only on a transactional queue. */
export type ContextOf<R extends readonly RoleMarker[], Tx> = [Tx] extends [never]
  ? InboxContext<R> & OutsideTransaction
  : Tx extends Transaction<infer DB>
    ? TransactionalContext<R, DB>
    : InboxContext<R> & OutsideTransaction;

/**
 * Extracts one context value, for handlers written as classes:
 * `const attempt = Ctx(keys.attempt).from(ctx)`.
 */
export function Ctx<K extends ContextKey>(key: K): { from<R extends readonly RoleMarker[]>(ctx: InboxContext<R> & KeyAvailable<R, K>): ValueOfKey<K> } {
  return Object.freeze({
    from: <R extends readonly RoleMarker[]>(ctx: InboxContext<R> & KeyAvailable<R, K>) => (ctx as InboxContext<R>).get(key as never) as ValueOfKey<K>,
  });
}

interface ContextClock {
  now(): Date;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Where a delivery's context is: its subscription and table, and the headers column when there is one. */
export interface ContextPlace {
  readonly subscription: string;
  readonly table: string;
  readonly headersColumn?: string | undefined;
}

/** What a context reads of its delivery (a claimed delivery fits as it is). */
export interface ContextSource {
  readonly id: unknown;
  /** The claimed row, raw: the headers column is read from it when a handler asks. */
  readonly row?: Readonly<Record<string, unknown>>;
  readonly attempt: number | undefined;
  readonly signal: AbortSignal;
  leaseDeadline(): Date | undefined;
  /** Writes progress (JSON text) while the row is held; absent where nothing holds a row (a test's `performJob`). */
  writeProgress?(progress: string): Promise<void>;
}

/** A delivery's context: one object with its methods on the prototype, so a delivery allocates no closures for it. */
class DeliveryContext {
  readonly #place: ContextPlace;
  readonly #source: ContextSource;
  readonly #clock: ContextClock;
  readonly #tx: AnyTransaction | undefined;

  constructor(place: ContextPlace, source: ContextSource, clock: ContextClock, tx?: AnyTransaction) {
    this.#place = place;
    this.#source = source;
    this.#clock = clock;
    this.#tx = tx;
    Object.freeze(this);
  }

  /** The handler's transaction; only a transactional queue's handler has one (the type says so too). */
  get tx(): AnyTransaction {
    if (this.#tx === undefined) throw notTransactional({ ...this.#place, id: this.#source.id });
    return this.#tx;
  }

  /** Read when a handler asks: a signal costs enough that a delivery makes one only then. */
  get signal(): AbortSignal {
    return this.#source.signal;
  }
  get subscription(): string {
    return this.#place.subscription;
  }
  get table(): string {
    return this.#place.table;
  }
  get id(): unknown {
    return this.#source.id;
  }

  get(key: ContextKey): unknown {
    switch (key.name) {
      case "attempt":
        return this.#source.attempt;
      case "leaseDeadline":
        return this.#source.leaseDeadline();
      case "id":
        return this.#source.id;
      case "subscription":
        return this.#place.subscription;
      case "table":
        return this.#place.table;
      case "headers":
        return headersOf(this.#place.headersColumn === undefined ? undefined : this.#source.row?.[this.#place.headersColumn]);
      default:
        throw unknownContextKey(key.name, this.#place);
    }
  }

  now(): Date {
    return this.#clock.now();
  }

  sleep(ms: number): Promise<void> {
    return this.#clock.sleep(ms, this.signal);
  }

  ack(result: unknown): AckOutcome {
    const json = JSON.stringify(result);
    return json === undefined ? { kind: "ack" } : Object.freeze({ kind: "ack", result: json });
  }

  progress(value: unknown): Promise<void> {
    const write = this.#source.writeProgress;
    if (write === undefined) return Promise.reject(progressNotShown({ ...this.#place, id: this.#source.id }));
    return write.call(this.#source, JSON.stringify(value) ?? "null");
  }
}

/** The headers column as the driver read it (JSONB object, JSON text, bytes), as string pairs; `{}` when empty. */
function headersOf(raw: unknown): Readonly<Record<string, string>> {
  if (raw === null || raw === undefined) return {};
  const value: unknown = typeof raw === "string" ? JSON.parse(raw) : raw instanceof Uint8Array ? JSON.parse(Buffer.from(raw).toString("utf8")) : raw;
  if (value === null || typeof value !== "object") return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) if (typeof v === "string") out[k] = v;
  return Object.freeze(out);
}

/** The context of a claimed delivery; `tx` in transactional mode. */
export function deliveryContext<R extends readonly RoleMarker[]>(place: ContextPlace, delivery: ContextSource, clock: ContextClock, tx?: AnyTransaction): InboxContext<R> {
  return new DeliveryContext(place, delivery, clock, tx) as unknown as InboxContext<R>;
}

/** The context of a batch: each row's own, and a signal that aborts with any of theirs. */
export function batchContext<R extends readonly RoleMarker[]>(place: ContextPlace, deliveries: readonly ContextSource[], clock: ContextClock): BatchContext<R> {
  const rows = deliveries.map((d) => deliveryContext<R>(place, d, clock));
  let signal: AbortSignal | undefined;
  const shared = (): AbortSignal => (signal ??= AbortSignal.any(deliveries.map((d) => d.signal)));
  return Object.freeze({
    get signal() {
      return shared();
    },
    subscription: place.subscription,
    table: place.table,
    rows,
    now: () => clock.now(),
    sleep: (ms: number) => clock.sleep(ms, shared()),
  });
}
