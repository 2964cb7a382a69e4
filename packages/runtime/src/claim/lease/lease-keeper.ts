import type { InboxDescription } from "@sqlinbox/core/internal";
import type { HeldLease } from "@sqlinbox/kysely-dialects";
import type { Clock, Timer } from "../../clock.js";
import type { Database } from "../../drivers/database.js";
import { leaseLost } from "../../errors.js";
import { errorFields, type Logger } from "../../logger.js";
import { SlotSet } from "../slot-set.js";

/**
 * A lease in work: its current token and how to tell its delivery it was lost. The abort
 * controller is made on first use (a handler reading `ctx.signal`, or a loss): most
 * deliveries never need one, and making one costs more than the rest of a delivery's bookkeeping.
 */
export class KeptLease {
  readonly id: unknown;
  /** The deadline written in the row now: the token every statement on it carries. */
  held: Date;
  /** Set while a settlement runs (or waits in a batch): the keeper leaves it alone. */
  settling = false;
  /** Claimed late, with less than half its term left: `lapsed` reads the clock for it before its delivery starts. */
  checkBeforeStart = false;
  /** Its place among its keeper's leases (a `SlotSet`) while held; -1 once released. */
  slot = -1;
  #controller: AbortController | undefined;
  #lost = false;

  constructor(id: unknown, held: Date) {
    this.id = id;
    this.held = held;
  }

  /** `id` as a string, to match against the ids a statement returns (only a partial ack or an extension needs it). */
  get key(): string {
    return keyOf(this.id);
  }

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  /** Why the signal aborted, without making it; `undefined` while it has not. */
  abortedWith(): { readonly reason: unknown } | undefined {
    const signal = this.#controller?.signal;
    return signal?.aborted === true ? { reason: signal.reason as unknown } : undefined;
  }

  /** The lease was lost (or given up): the keeper no longer extends it. A cancel aborts the signal but keeps the lease. */
  get aborted(): boolean {
    return this.#lost;
  }

  abort(reason: unknown): void {
    this.#lost = true;
    this.#controller ??= new AbortController();
    this.#controller.abort(reason);
  }

  /** Aborts the signal and keeps the lease (a cancel, a timeout: the handler winds down and settles while the keeper extends). */
  interrupt(reason: unknown): void {
    this.#controller ??= new AbortController();
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }
}

/**
 * Extends every lease of one subscription at half its term, in one statement.
 * A lease the statement did not extend was taken by another claim: its delivery's signal
 * aborts with `LeaseLost`. When the statement fails, leases whose deadline passed are lost
 * too, and the keeper tries again soon. Settlements wait for a running extension, so they
 * always carry the current token.
 */
export class LeaseKeeper {
  /** Leases held and not released. */
  readonly #held = new SlotSet<KeptLease>();
  readonly #database: Database;
  readonly #spec: InboxDescription;
  readonly #subscription: string;
  readonly #leaseMs: number;
  readonly #precision: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #timer: Timer | undefined;
  #running: Promise<void> | undefined;
  /**
   * The last extension failed, or the one running has taken over a quarter of the lease: a lease
   * claimed ahead may run out before it starts, so `lapsed` reads the clock. Otherwise every held
   * lease was extended within the last half lease, and `lapsed` needs no clock read.
   */
  #unsure = false;
  #stopped = true;

  constructor(options: {
    database: Database;
    spec: InboxDescription;
    subscription: string;
    leaseMs: number;
    precision: number;
    clock: Clock;
    logger: Logger;
  }) {
    this.#database = options.database;
    this.#spec = options.spec;
    this.#subscription = options.subscription;
    this.#leaseMs = options.leaseMs;
    this.#precision = options.precision;
    this.#clock = options.clock;
    this.#logger = options.logger;
  }

  get size(): number {
    return this.#held.size;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(this.#leaseMs / 2);
  }

  /** No more extensions: leases in work keep the deadline they hold. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  hold(id: unknown, held: Date): KeptLease {
    const lease = new KeptLease(id, held);
    this.#held.add(lease);
    return lease;
  }

  /** Marks a lease as settling once no extension is running, so its token is current. */
  async beginSettle(lease: KeptLease): Promise<void> {
    while (this.#running) await this.#running;
    lease.settling = true;
  }

  /** `beginSettle` for a batch: one wait for a running extension, then every lease is marked. */
  async beginSettleMany(leases: readonly KeptLease[]): Promise<void> {
    while (this.#running) await this.#running;
    for (const lease of leases) lease.settling = true;
  }

  release(lease: KeptLease): void {
    this.#held.delete(lease);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = this.#clock.setTimer(ms, () => {
      this.#timer = undefined;
      const run = this.#extendAll().finally(() => {
        if (this.#running === run) this.#running = undefined;
      });
      this.#running = run;
    });
  }

  async #extendAll(): Promise<void> {
    const leases = this.#onePerRow();
    if (leases.length === 0) {
      this.#schedule(this.#leaseMs / 2);
      return;
    }
    const { dialect } = this.#database;
    const until = dialect.time.truncate(new Date(this.#clock.now().getTime() + this.#leaseMs), this.#precision);
    const held: HeldLease[] = leases.map((l) => ({ id: l.id, held: l.held }));
    // An extension still running after a quarter of the lease: leases claimed ahead may run out before they start.
    const slow = this.#clock.setTimer(this.#leaseMs / 4, () => {
      this.#unsure = true;
    });
    try {
      const extended = await this.#extendedIds(held, until);
      slow.cancel();
      this.#unsure = false;
      for (const lease of leases) {
        if (extended.has(lease.key)) lease.held = until;
        else this.#lose(lease, "another claim took the row");
      }
      this.#logger.debug({ extended: extended.size, until: until.toISOString() }, "leases extended");
      this.#schedule(this.#leaseMs / 2);
    } catch (error) {
      slow.cancel();
      this.#unsure = true;
      const now = this.#clock.now().getTime();
      for (const lease of leases) if (lease.held.getTime() <= now) this.#lose(lease, "the lease expired while extensions failed");
      this.#logger.warn({ ...errorFields(error), leases: leases.length }, "lease extension failed; trying again");
      this.#schedule(Math.max(100, Math.min(1000, this.#leaseMs / 8)));
    }
  }

  /**
   * The leases to extend: not settling, not lost, one per row. A row held twice was claimed again
   * after its first lease ran out unnoticed (an event loop blocked past the deadline): the older
   * token is gone from the row, so that lease is lost now. The extension's result names rows, not
   * tokens, and would otherwise count the older one as extended too.
   */
  #onePerRow(): KeptLease[] {
    const byRow = new Map<string, KeptLease>();
    for (const lease of this.#held) {
      // Losing a lease below takes it out of the set; the walk goes on over the rest.
      if (lease.settling || lease.aborted) continue;
      const key = lease.key;
      const other = byRow.get(key);
      if (other === undefined) {
        byRow.set(key, lease);
        continue;
      }
      const [older, newer] = other.held.getTime() <= lease.held.getTime() ? [other, lease] : [lease, other];
      byRow.set(key, newer);
      this.#lose(older, "another claim took the row");
    }
    return [...byRow.values()];
  }

  /** Runs the extension; where the engine cannot return the extended ids, reads the deadlines back. */
  async #extendedIds(held: HeldLease[], until: Date): Promise<Set<string>> {
    const { dialect } = this.#database;
    const idName = this.#spec.id.name;
    const leaseName = this.#spec.lease?.name ?? "";
    const result = await this.#database.execute("extend", dialect.lease.extend(this.#spec, held, until, this.#precision));
    if (dialect.capabilities.updateReturning) return new Set(result.rows.map((r) => keyOf(r[idName])));
    const read = await this.#database.execute(
      "extend",
      dialect.lease.readLeases(
        this.#spec,
        held.map((h) => h.id),
      ),
    );
    const ids = new Set<string>();
    for (const row of read.rows) {
      const deadline = dialect.time.decode(row[leaseName]);
      if (deadline !== null && deadline.getTime() === until.getTime()) ids.add(keyOf(row[idName]));
    }
    return ids;
  }

  /**
   * A lease claimed ahead, about to start: false while it holds. Lost already, or its deadline
   * passed (on the clock leases are written by) while it waited — its extensions hung or failed —
   * the row may be another claim's by now, so it must not start: the lease is lost (warned, its
   * signal aborted) and this says true. The clock is read only while extensions are in doubt, or
   * for a lease its claim handed out late (`checkBeforeStart`).
   */
  lapsed(lease: KeptLease): boolean {
    if (lease.aborted) return true;
    if ((!this.#unsure && !lease.checkBeforeStart) || lease.held.getTime() > this.#clock.now().getTime()) return false;
    this.#lose(lease, "it ran out before its delivery started");
    return true;
  }

  #lose(lease: KeptLease, why: string): void {
    this.release(lease);
    const error = leaseLost(why, { subscription: this.#subscription, table: this.#spec.table, id: lease.id });
    this.#logger.warn({ id: lease.id, held: lease.held.toISOString() }, `lease lost: ${why}`);
    lease.abort(error);
  }
}

/** How long a settlement that failed on a lost connection waits before it goes again on a fresh one. */
export const SETTLE_RETRY_MS = 100;
/** A settlement is tried again only while its lease holds at least this much longer: a late write would find the token gone. */
const SETTLE_RETRY_MARGIN_MS = 250;

/** True while `lease` holds long enough for one more try of its settlement. */
export function leaseHoldsFor(lease: KeptLease, now: Date): boolean {
  return lease.held.getTime() - now.getTime() > SETTLE_RETRY_MARGIN_MS;
}

/** Ids compare as text: drivers return a BIGINT as a string and take it back either way. */
export function keyOf(id: unknown): string {
  return typeof id === "bigint" ? id.toString() : String(id);
}
