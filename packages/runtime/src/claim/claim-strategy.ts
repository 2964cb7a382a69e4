import type { ClaimForm, ErrorPlace, InboxDescription } from "@sqlinbox/core/internal";
import type { RawRow, SlotPlace } from "@sqlinbox/kysely-dialects";
import { deliveredAttempt as attemptOfCounted } from "@sqlinbox/kysely-dialects/internal";
import type { Clock } from "../clock.js";
import type { AnyTransaction, Database } from "../drivers/database.js";
import type { Logger } from "../logger.js";
import type { ParkedRows } from "./parked-rows.js";
import type { DeadLetterTarget } from "../declare/queue.js";
import { FORM_FACTS, type StopFate } from "./form-facts.js";
import type { KeyRegistry } from "./held/key-registry.js";
import type { CompiledQuery, QueryResult } from "kysely";
import type { Settlement } from "./settlement.js";

/** Runs one statement inside the transaction a settlement is written in. */
export type StatementRunner = <R>(query: CompiledQuery<R>) => Promise<QueryResult<R>>;

/**
 * More statements a settlement carries in its own transaction (a workflow step's ack writes its
 * result into the workflow table and releases the steps now due): run after the settlement's
 * statements took, before the commit, on every form. A settlement it `wants` is never batched
 * with others: it is written in a transaction of its own (or in the hold's, where the form has one).
 * A throw rolls the settlement back with it.
 */
export interface SettlementFollowUp {
  wants(settlement: Settlement): boolean;
  run(on: StatementRunner, id: unknown, settlement: Settlement): Promise<void>;
  /** The settlement of row `id` that `run` joined has committed (told by the form once its settlement resolved). */
  committed(id: unknown): void;
}

/**
 * Told once a settlement was written (`ok`), or why not; called from the write's end, it must not throw.
 * An object rather than a callback: a delivery's run is told itself, with no closure made per delivery.
 */
/** Acks written by one statement at most: 2 parameters each, far below every engine's limit (SQLite 3.32+: 32,766). */
export const MAX_ACKS_PER_STATEMENT = 512;

export interface SettleDone {
  settled(ok: boolean, error?: unknown): void;
}

/** One claimed row, held by its claim form until it is settled. */
export interface ClaimedDelivery {
  readonly id: unknown;
  readonly row: RawRow;
  /** The attempt the claim counted, when the table has an attempt column. */
  readonly attempt: number | undefined;
  /** Aborts when the hold is lost (a lease another claim took) or the delivery is abandoned. */
  readonly signal: AbortSignal;
  /** Why `signal` aborted; `undefined` while it has not. Reads without making the signal (made when first read, which costs per row). */
  abortedWith(): { readonly reason: unknown } | undefined;
  /** The deadline held now, in the lease form. */
  leaseDeadline(): Date | undefined;
  /** Its place among its subscription's deliveries in work (a `SlotSet`), -1 otherwise: set by that set only. */
  slot: number;
  /**
   * Writes `settlement` while the row is still held, then tells `done` once: `ok`, or why not
   * (`LeaseLost`: the hold was lost and nothing changed; `Closed`; the statement's error). Never
   * throws. No promise: the lease form's batched acks settle with none made.
   */
  settle(settlement: Settlement, done: SettleDone): void;
  /**
   * Gives the delivery up unsettled (the shutdown grace is over): aborts its signal, lets its hold lapse.
   * `started: false`: claimed ahead and never started (a stop with rows still buffered).
   */
  abandon(reason: unknown, started?: boolean): void;
  /**
   * Claimed ahead and about to start: true when its hold is gone already (the lease form: lost, or
   * run out while it waited in the buffer, its extensions hung or failing), so the row may be
   * another claim's and the delivery must not run (the advisory form: the session of its batch
   * ended). The form has then given it up (logged). False where a hold cannot lapse while the
   * process lives (a row lock, an advisory lock of its own session).
   */
  lapsedBeforeStart?(): boolean;
  /**
   * Aborts the signal only (a cancel, or the queue's timeout passed): the hold stays (a lease is
   * still extended) until the delivery is settled, as usual. A delivery no longer held is left alone.
   */
  interrupt(reason: unknown): void;
  /**
   * Transactional mode: opens the transaction the handler writes through (`ctx.tx`). The
   * settlement then commits it with an ack and rolls it back for any other outcome.
   */
  openHandlerTransaction(): Promise<AnyTransaction>;
  /** `ctx.progress`: writes a progress value (JSON text) while the row is held, fenced by the hold. */
  writeProgress(progress: string): Promise<void>;
}

/**
 * How a form's claims are paced (`PaceMode` in the pacer, which adds `wholeBatches` for a batch handler):
 * `ahead` (rows wait at no cost: claim batches ahead), `oneRow` (one row per claim's transaction),
 * `shared` (one transaction per claim, its rows buffered), `perWorker` (a claimed row holds a connection at once).
 */
type FormPace = "ahead" | "oneRow" | "shared" | "perWorker";

/**
 * Every question the rest of the runtime asks of a claim form, answered once by its strategy:
 * no file outside `claim/` names a form.
 */
export interface ClaimProfile {
  /** The form, as telemetry and error messages label it. */
  readonly form: ClaimForm;
  readonly pace: FormPace;
  /** Claims can run side by side on the database (not a single writer such as SQLite): more claims in flight can hide latency. */
  readonly claimsSideBySide: boolean;
  /**
   * Claims side by side cost the server more per row than the latency they hide: each walks the
   * rows the others hold at the queue's head. Claims ahead then stay at the minimum, however fast
   * the handlers (the lease form's one-statement claim: Postgres).
   */
  readonly claimsContend: boolean;
  /** The table stores a delay (a retryAfter column, or the lease column): else a `retryAfter` is parked in this process. */
  readonly storesDelay: boolean;
  /** Connections each delivery in work holds for its whole run (0 for the lease form). */
  readonly connectionsPerDelivery: number;
  /** A delivery holds a connection of its own: its worker waits for the settlement (the pool budget counts on it). */
  readonly holdsWorker: boolean;
  /** A batch handler's rows share one hold (one transaction per batch): the pool budget counts batches, not rows. */
  readonly batchSharesHold: boolean;
  /** The table, as errors name it ("a row-lock table"). */
  readonly describedAs: string;
  /** What a stop does to a delivery still in work when the grace ends. */
  readonly stop: StopFate;
}

/** A profile from the form's facts and what the strategy decided. */
export function profileOf(
  setup: Pick<ClaimSetup, "spec">,
  decided: Pick<ClaimProfile, "pace" | "claimsSideBySide" | "connectionsPerDelivery"> & Partial<Pick<ClaimProfile, "claimsContend">>,
): ClaimProfile {
  const form = setup.spec.form;
  const facts = FORM_FACTS[form];
  return Object.freeze({
    form,
    claimsContend: false,
    ...decided,
    storesDelay: setup.spec.retryAfter !== undefined || facts.storesDelayInHold,
    // A shared claim's row holds no connection of its own: its transaction's connection is counted by the pacer, and a
    // worker that waited for the shared commit would wait for rows still in the buffer.
    holdsWorker: decided.connectionsPerDelivery > 0 && decided.pace !== "shared",
    batchSharesHold: facts.sharesTransactions,
    describedAs: facts.describedAs,
    stop: facts.stop,
  });
}

/** How a subscription holds rows: one per claim form. */
export interface ClaimStrategy {
  readonly profile: ClaimProfile;
  claim(limit: number): Promise<ClaimedDelivery[]>;
  /**
   * Gives back rows that were claimed ahead but never started (a stop with rows still buffered),
   * at once and without spending their attempt. `routine`: a give-back a cap makes as it runs (rows
   * claimed past it), which happens again and again under a cap, so it is logged at debug level.
   */
  releaseUnstarted(deliveries: readonly ClaimedDelivery[], routine?: boolean): Promise<void>;
  /**
   * Transactions that claimed rows and are still open, one connection each (shared row-lock claims:
   * the pacer keeps them within `workers`, what the pool budget counts); 0 where claims hold none.
   */
  readonly heldTransactions: number;
  /** A publish in this process: forget what was read ahead of claims (the advisory form's candidate window). */
  invalidate(): void;
  /** Starts what keeps held rows held (the lease keeper). */
  start(): void;
  /** Stops keeping: deliveries in work keep what they hold now and may still settle. */
  stop(): void;
  /**
   * After a claim that came back short: how long to wait before the next one, when the strategy
   * knows better than the poll interval (a rate limit's window frees a start then); `undefined`: the poll interval.
   */
  waitAfterShortMs?(): number | undefined;
  /**
   * The last claim came back short because the cap on rows in work (`maxInWork`) was full: a delivery
   * of this process that ends frees room, so the subscription claims again then, not at its next poll.
   * Absent where there is no cap.
   */
  atCap?(): boolean;
}

/** What a claim strategy is built from. */
export interface ClaimSetup {
  readonly database: Database;
  readonly spec: InboxDescription;
  readonly subscription: string;
  /** The lease term in ms (whole seconds). */
  readonly leaseMs: number;
  /** Fractional second digits of the lease column, from the schema check. */
  readonly precision: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The advisory keys (and cap places) in work in this process on this database: the broker's, one per database. */
  readonly keys: KeyRegistry;
  /** True once the broker closed: settlements fail with `Closed`. */
  readonly isClosed: () => boolean;
  /** Handlers write through a transaction of their own, committed with an ack (`.transactional()`). */
  readonly transactional?: boolean;
  /** Row lock: the rows of one claim share one transaction (`.sharedTransaction()`, or a batch handler). */
  readonly sharedTransaction?: boolean;
  /** Rows a claim takes at most (`.batch(n)`): above 1, an advisory claim locks its keys together on one session. */
  readonly batch?: number;
  /** Where a `deadLetter` outcome moves the row (`InboxQueue.deadLetter`). */
  readonly deadLetter?: DeadLetterTarget | undefined;
  /** Rows this process keeps out of its claims (a delay on a held table with no retryAfter column). */
  readonly parked?: ParkedRows | undefined;
  /** Rows of one order key (or of the group) in work at once (`maxInWorkPerKey`); unset: the table's own rule. */
  readonly perKey?: number | undefined;
  /**
   * A cap on rows in work held by the delivery's own hold (`maxInWork`, `claim/cap/`): a row-lock
   * claim locks one of `n` slot rows in its transaction (`SlotRows`); an advisory claim takes one of
   * `n` slot locks on its session (`SlotLocks`).
   */
  readonly capSlots?: CapSlots | undefined;
  /** Statements each settlement it wants carries in its own transaction (a workflow step's release). */
  readonly followUp?: SettlementFollowUp | undefined;
}

/** The slots of a cap on rows in work (`maxInWork`), where the delivery's hold keeps one. */
export interface CapSlots {
  readonly place: SlotPlace;
  readonly n: number;
}

/**
 * The attempt a delivery of `row` reads (`undefined` without an attempt column): the dialects' rule
 * (`deliveredAttempt` of `@sqlinbox/kysely-dialects/internal`, which the operator tools read too) on
 * the counted value `row` carries (`UPDATE … RETURNING`, or a row that `asClaimed` stamped).
 */
export function deliveredAttempt(spec: InboxDescription, row: RawRow): number | undefined {
  if (spec.attempt === undefined) return undefined;
  return attemptOfCounted(row[spec.attempt.name]);
}

/**
 * Makes a row read before its claim stamped it (MySQL/MariaDB's `SELECT … FOR UPDATE` then the
 * stamp, in one transaction) read as claimed: the attempt as counted and, in the lease form, the
 * deadline as written (`lease`, in the form the driver reads it back). The row object is patched
 * in place from what the claim wrote — cheaper than reading it again, and exact only because the
 * locking read holds the row until the stamp commits: no other claim can count it in between. A
 * row read without a lock (an advisory candidate) is never patched: its take reads it back.
 */
export function asClaimed(spec: InboxDescription, row: RawRow, lease?: unknown): RawRow {
  const attempt = spec.attempt?.name;
  if (attempt !== undefined) row[attempt] = counted(row[attempt]);
  if (lease !== undefined && spec.lease !== undefined) row[spec.lease.name] = lease;
  return row;
}

/** `attempt + 1` as SQL computes it, in the type the driver read the column as (NULL stays NULL). */
function counted(value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (typeof value === "bigint") return value + 1n;
  if (typeof value === "string") return String(Number(value) + 1);
  return Number(value) + 1;
}

/** Where a claimed row is, for its errors and log lines: subscription, table and id. */
export function deliveryPlace(setup: Pick<ClaimSetup, "spec" | "subscription">, id: unknown): ErrorPlace {
  return { subscription: setup.subscription, table: setup.spec.table, id };
}

/** On a table with a group column, a subscription claims only its group: the route name selects it. */
export function groupOf(setup: Pick<ClaimSetup, "spec" | "subscription">): { group?: string } {
  return setup.spec.group === undefined ? {} : { group: setup.subscription };
}

/** How many rows of one key a claim may have in work, when the subscription says (`maxInWorkPerKey`). */
export function perKeyOf(setup: Pick<ClaimSetup, "perKey">): { perKey?: number } {
  return setup.perKey === undefined ? {} : { perKey: setup.perKey };
}

/** The ids a claim leaves out: the rows this process parked, when any. */
export function excludedBy(setup: Pick<ClaimSetup, "parked">): { exclude?: readonly unknown[] } {
  const ids = setup.parked?.ids();
  return ids === undefined || ids.length === 0 ? {} : { exclude: ids };
}
