import { SqlInboxError, type ErrorPlace } from "@sqlinbox/core";
import type { RawRow } from "@sqlinbox/kysely-dialects";
import { LeaseKeeper, type KeptLease } from "../lease-keeper.js";
import type { HandlerOutcome } from "../outcome.js";
import type { ClaimedDelivery, ClaimSetup, ClaimStrategy } from "./claim-strategy.js";

/**
 * The lease form: a claim writes `now + lease` into the lease column and counts an attempt,
 * then commits, so a delivery in work holds no connection. The deadline is the token:
 * every extension and settlement carries it, and one that finds another deadline changes
 * nothing (`LeaseLost`).
 */
export class LeaseClaim implements ClaimStrategy {
  readonly form = "lease" as const;
  readonly connectionsPerDelivery = 0;
  readonly #setup: ClaimSetup;
  readonly #keeper: LeaseKeeper;

  constructor(setup: ClaimSetup) {
    this.#setup = setup;
    this.#keeper = new LeaseKeeper(setup);
  }

  start(): void {
    this.#keeper.start();
  }

  stop(): void {
    this.#keeper.stop();
  }

  async claim(limit: number): Promise<ClaimedDelivery[]> {
    const { database, spec, clock, leaseMs, precision } = this.#setup;
    const { lease: statements, time } = database.dialect;
    const now = clock.now();
    const until = time.truncate(new Date(now.getTime() + leaseMs), precision);
    const single = statements.claim(spec, { limit, now, until, precision });
    let rows: readonly RawRow[];
    let counted: boolean;
    if (single !== null) {
      rows = (await database.execute("claim", single)).rows;
      counted = true;
    } else {
      // MySQL/MariaDB: SELECT … FOR UPDATE SKIP LOCKED, then stamp the rows, in one short transaction.
      rows = await database.transaction("claim", async (trx) => {
        const selected = (await database.execute("claim", statements.selectClaimable(spec, { limit, now }), trx)).rows;
        if (selected.length === 0) return selected;
        const ids = selected.map((r) => r[spec.id.name]);
        await database.execute("claim", statements.stampClaimed(spec, ids, until, precision), trx);
        return selected;
      });
      counted = false;
    }
    return rows.map((row) => this.#delivery(row, until, counted));
  }

  #delivery(row: RawRow, held: Date, counted: boolean): ClaimedDelivery {
    const { spec, subscription } = this.#setup;
    const id = row[spec.id.name];
    const rawAttempt = spec.attempt === undefined ? undefined : Number(row[spec.attempt.name]);
    const attempt = rawAttempt === undefined ? undefined : counted ? rawAttempt : rawAttempt + 1;
    const lease = this.#keeper.hold(id, held);
    const place: ErrorPlace = { subscription, table: spec.table, id };
    let abandoned = false;
    return {
      id,
      row,
      attempt,
      signal: lease.controller.signal,
      leaseDeadline: () => lease.held,
      settle: (outcome) => this.#settle(lease, outcome, place, abandoned),
      abandon: (reason) => {
        abandoned = true;
        this.#keeper.release(lease);
        lease.controller.abort(reason);
      },
    };
  }

  async #settle(lease: KeptLease, outcome: HandlerOutcome, place: ErrorPlace, abandoned: boolean): Promise<void> {
    const { database, spec, clock, precision, isClosed } = this.#setup;
    if (isClosed() || abandoned) {
      this.#keeper.release(lease);
      throw new SqlInboxError("Closed", "the broker is closed: the settlement was not written; the row returns when its lease expires", place);
    }
    await this.#keeper.beginSettle(lease);
    try {
      const statements = database.dialect.lease;
      const held = { id: lease.id, held: lease.held };
      const now = clock.now();
      const query =
        outcome.kind === "ack" || outcome.kind === "drop"
          ? statements.settleAck(spec, held, now, precision)
          : statements.settleRetry(spec, held, outcome.kind === "retryAfter" ? new Date(now.getTime() + outcome.ms) : null, precision);
      const result = await database.execute("settle", query);
      if (Number(result.numAffectedRows ?? 0n) === 0) {
        throw new SqlInboxError("LeaseLost", `the ${outcome.kind} was not written: the row no longer holds this delivery's lease (${lease.held.toISOString()})`, place);
      }
    } finally {
      this.#keeper.release(lease);
    }
  }
}
