import type { RawRow } from "@sqlinbox/kysely-dialects";
import { fifoRuleApplies, orderedKey } from "@sqlinbox/kysely-dialects/internal";
import { closed } from "../../errors.js";
import { keyOf, LeaseKeeper, type KeptLease } from "./lease-keeper.js";
import { errorFields } from "../../logger.js";
import {
  asClaimed,
  deliveredAttempt,
  groupOf,
  MAX_ACKS_PER_STATEMENT,
  perKeyOf,
  type ClaimedDelivery,
  type ClaimSetup,
  type ClaimStrategy,
  type ClaimProfile,
  profileOf,
} from "../claim-strategy.js";
import { LeaseDelivery } from "./lease-delivery.js";
import { LeaseWrites } from "./lease-writes.js";

/**
 * The lease form: a claim writes `now + lease` into the lease column and counts an attempt,
 * then commits, so a delivery in work holds no connection. The deadline is the token:
 * every extension and settlement carries it, and one that finds another deadline changes
 * nothing (`LeaseLost`).
 *
 * A transactional handler writes in a transaction of its own, held for its whole run: an ack
 * deletes the row inside it, still carrying the token, and commits only if that took; zero
 * rows means the lease was lost, and everything rolls back (`LeaseLost`). Each delivery settles
 * through `LeaseWrites` (`lease-writes.ts`) or, a plain ack, `LeaseAcks` (`lease-delivery.ts`), never through this claim.
 */
export class LeaseClaim implements ClaimStrategy {
  readonly profile: ClaimProfile;
  readonly heldTransactions = 0;
  readonly #setup: ClaimSetup;
  readonly #keeper: LeaseKeeper;
  /** What each delivery settles through. */
  readonly #writes: LeaseWrites;
  /** Ordered keys where claims run side by side: each claim's rows are checked once it has committed (`#withoutCrowded`). */
  readonly #checksKeys: boolean;
  /** The last two-statement claim found nothing: the next one reads first whether a row is there (`probeClaimable`). */
  #idle = false;

  constructor(setup: ClaimSetup) {
    this.#setup = setup;
    this.profile = profileOf(setup, {
      // Rows wait in the subscription's buffer at no cost: the keeper extends their leases too.
      pace: "ahead",
      // Row locks mean concurrent writers; without them (SQLite) one writer runs at a time.
      claimsSideBySide: setup.database.dialect.capabilities.rowLock,
      // A claim of one statement (Postgres) is short: two in flight cover its latency, and more only add server CPU per
      // row (lease b64-w8 on Postgres: 2 claims ahead and 1 ack statement at a time beat 4 and 2 by about 12%).
      // A claim of two statements in a transaction (MySQL/MariaDB) takes longer: claims ahead follow its latency.
      claimsContend: setup.database.dialect.capabilities.rowLock && setup.database.dialect.capabilities.updateReturning,
      // Nothing held between statements; a transactional handler's transaction holds a connection.
      connectionsPerDelivery: setup.transactional === true ? 1 : 0,
    });
    this.#keeper = new LeaseKeeper(setup);
    this.#writes = new LeaseWrites(setup, this.#keeper);
    this.#checksKeys = this.profile.claimsSideBySide && orderedKey(setup.spec, perKeyOf(setup)) !== undefined;
  }

  start(): void {
    this.#keeper.start();
  }

  stop(): void {
    this.#keeper.stop();
  }

  invalidate(): void {}

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const { database, spec, clock, leaseMs, precision } = this.#setup;
    const { lease: statements, time } = database.dialect;
    const group = { ...groupOf(this.#setup), ...perKeyOf(this.#setup) };
    // The clock is read for each try (a deadlock runs the claim again): a retry writes a deadline from its own time.
    let until = new Date(0);
    const times = (): { now: Date; until: Date } => {
      const now = clock.now();
      until = time.truncate(new Date(now.getTime() + leaseMs), precision);
      return { now, until };
    };
    let rows: readonly RawRow[];
    if (statements.claimsInOneStatement) {
      rows = (await database.executeBuilt("claim", () => statements.claim(spec, { limit, precision, ...group, ...times() }))).rows;
      // Postgres returns the deadline it wrote as NULL (a claimed row's lease is never NULL): parsing it per row
      // would cost more than the rest of a delivery's bookkeeping. It is written in here, as the driver reads time.
      const leaseName = spec.lease?.name;
      if (leaseName !== undefined && rows.length > 0 && (rows[0] as RawRow)[leaseName] === null) {
        const stamped = database.timeAsRead(until, precision);
        for (const row of rows) row[leaseName] = ownCopy(stamped);
      }
    } else {
      // MySQL/MariaDB: while the last claim found nothing, one unlocked read first (one round trip): the
      // claim's transaction (three) runs only once it finds a row.
      // Not on a fifo table: its head rule counts the group's rows the claim's transaction locked, which a read
      // outside it cannot.
      if (this.#idle && !fifoRuleApplies(spec, group)) {
        const probe = statements.probeClaimable(spec, { now: clock.now(), ...group });
        if ((await database.execute("observe", probe)).rows.length === 0) return [];
      }
      // SELECT … FOR UPDATE SKIP LOCKED, then stamp the rows, in one short transaction.
      rows = await database.transaction("claim", async (trx) => {
        const { now } = times();
        // Fifo: lock the group's rows first; the claim takes the head only if no other session holds one of them.
        const options = { limit, now, ...group };
        const fifo = fifoRuleApplies(spec, group) ? { fifoLocked: (await database.execute("claim", statements.lockFifoGroup(spec, options), trx)).rows.length } : {};
        const selected = (await database.execute("claim", statements.selectClaimable(spec, { ...options, ...fifo }), trx)).rows;
        if (selected.length === 0) return selected;
        const ids = selected.map((r) => r[spec.id.name]);
        await database.execute("claim", statements.stampClaimed(spec, ids, until, precision), trx);
        // Read before the stamp: the rows handed over carry the attempt and the deadline it wrote, as the driver reads them back.
        const stamped = database.timeAsRead(until, precision);
        for (const row of selected) asClaimed(spec, row, ownCopy(stamped));
        return selected;
      });
      this.#idle = rows.length === 0;
    }
    const claimed = rows.map((row) => this.#delivery(row, until));
    const deliveries = this.#unlapsed(claimed, until);
    return this.#checksKeys ? this.#withoutCrowded(deliveries) : deliveries;
  }

  /**
   * A claim that returned late (its statement stalled: a cluster reforming, a starved pool or event loop) hands out
   * leases with less than half a term left, before the keeper's first extension: each is checked against the clock
   * before its delivery starts, and one that ran out is not started (the row may be another claim's by now): its
   * lease is lost, warned as such. Those that ran out already are left out here, so no buffer or batch receives them.
   */
  #unlapsed(deliveries: LeaseDelivery[], until: Date): LeaseDelivery[] {
    if (deliveries.length === 0 || until.getTime() - this.#setup.clock.now().getTime() >= this.#setup.leaseMs / 2) return deliveries;
    for (const d of deliveries) d.lease.checkBeforeStart = true;
    return deliveries.filter((d) => !this.#keeper.lapsed(d.lease));
  }

  /**
   * Ordered keys where claims run side by side: a claim cannot see a lease another claim is writing,
   * so once this one has committed, the rows whose key holds `perKey` other live leases (a claim of
   * the key's late-committed head, say, that ran beside this one) are given back unstarted, their
   * attempt undone. Of two such claims the later to commit sees the other here; if both do, both
   * give back and the key's head goes to the next claim. A check that fails gives back every row:
   * none can be known to be alone in its key.
   */
  async #withoutCrowded(deliveries: LeaseDelivery[]): Promise<ClaimedDelivery[]> {
    const { database, spec, clock } = this.#setup;
    if (deliveries.length === 0) return deliveries;
    const check = database.dialect.lease.selectCrowded(
      spec,
      { ...perKeyOf(this.#setup), now: clock.now() },
      deliveries.map((d) => d.id),
    );
    let crowded: Set<string>;
    try {
      crowded = new Set((await database.execute("claim", check)).rows.map((r) => keyOf(r[spec.id.name])));
    } catch (error) {
      await this.#giveBack(
        deliveries.map((d) => d.lease),
        "claimed rows given back: the check of their order keys failed",
      );
      throw error;
    }
    if (crowded.size === 0) return deliveries;
    const given = deliveries.filter((d) => crowded.has(d.lease.key)).map((d) => d.lease);
    await this.#giveBack(given, "claimed rows given back unstarted: a claim beside this one took another row of their order key");
    return deliveries.filter((d) => !crowded.has(d.lease.key));
  }

  #delivery(row: RawRow, held: Date): LeaseDelivery {
    const { spec } = this.#setup;
    const id = row[spec.id.name];
    const attempt = deliveredAttempt(spec, row);
    return new LeaseDelivery(this.#writes, id, row, attempt, this.#keeper.hold(id, held));
  }

  async releaseUnstarted(deliveries: readonly ClaimedDelivery[], routine = false): Promise<void> {
    const leases = deliveries.flatMap((d) => (d instanceof LeaseDelivery ? [d.lease] : []));
    if (routine) await this.#giveBack(leases, "rows claimed past the cap were given back", "debug");
    else await this.#giveBack(leases, "rows claimed ahead but not started were given back");
  }

  /**
   * Claimed rows no handler received: their leases given back and their attempts undone, each row only while
   * it holds its token; logged with `what` (at `level`). On failure (or once closed) they return when their lease expires.
   */
  async #giveBack(leases: readonly KeptLease[], what: string, level: "info" | "debug" = "info"): Promise<void> {
    const { database, spec, precision, logger, isClosed } = this.#setup;
    if (leases.length === 0) return;
    try {
      if (isClosed()) throw closed({ subscription: this.#setup.subscription, table: spec.table });
      await this.#keeper.beginSettleMany(leases);
      let released = 0;
      for (let i = 0; i < leases.length; i += MAX_ACKS_PER_STATEMENT) {
        const chunk = leases.slice(i, i + MAX_ACKS_PER_STATEMENT).map((l) => ({ id: l.id, held: l.held }));
        const result = await database.execute("settle", database.dialect.lease.releaseUnstarted(spec, chunk, precision));
        released += database.dialect.capabilities.updateReturning ? result.rows.length : Number(result.numAffectedRows ?? 0n);
      }
      logger[level]({ released, unstarted: leases.length, ids: leases.length <= 16 ? leases.map((l) => l.id) : undefined }, what);
    } catch (error) {
      logger.warn(
        { ...errorFields(error), unstarted: leases.length },
        "could not give back claimed rows no handler received; they return when their lease expires, their attempt spent",
      );
    } finally {
      for (const lease of leases) this.#keeper.release(lease);
    }
  }
}

/** A value for one row: a `Date` is copied (a handler may change its row's), text is shared. */
function ownCopy(value: unknown): unknown {
  return value instanceof Date ? new Date(value.getTime()) : value;
}
