import type { ClaimOptions, RawRow, RowLockStatements } from "@sqlinbox/kysely-dialects";
import { fifoRuleApplies } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";
import { asClaimed, perKeyOf, type ClaimSetup } from "../claim-strategy.js";
import type { ClaimTransaction } from "./claim-transaction.js";
import { OrderKeyHold } from "./order-key-hold.js";

/** Runs a statement in one claim's transaction (faults and activity applied by the claim). */
export type TransactionRun = <R>(query: CompiledQuery<R>) => Promise<QueryResult<R>>;

/** How many times a claim runs again for rows whose keys another transaction holds (`take`). */
const MAX_KEY_ROUNDS = 3;

/**
 * What one row-lock claim's transaction takes, in order: the fifo group's rows where the claim cannot
 * lock them itself (MySQL/MariaDB), the claimable rows `FOR UPDATE SKIP LOCKED` (with ordered keys,
 * each row's key too), and their attempt where the claim does not count it itself.
 */
export class RowLockRows {
  readonly #setup: ClaimSetup;
  readonly #statements: RowLockStatements;
  /** The claim returns the rows before counting their attempts: `countAttempts` follows it (MySQL/MariaDB, with an attempt column). */
  readonly #countsAfterClaim: boolean;
  /** Fifo where the claim cannot lock its group itself: `lockFifoGroup` runs first (MySQL/MariaDB). */
  readonly #locksFifoGroupFirst: boolean;
  /** Ordered keys: the claim's transaction also locks each claimed row's key (`OrderKeyHold`). */
  readonly #keys: OrderKeyHold | undefined;

  constructor(setup: ClaimSetup, statements: RowLockStatements) {
    this.#setup = setup;
    this.#statements = statements;
    this.#countsAfterClaim = setup.spec.attempt !== undefined && !statements.countsInClaim;
    this.#locksFifoGroupFirst = fifoRuleApplies(setup.spec, perKeyOf(setup)) && !statements.claimLocksFifoGroup;
    this.#keys = OrderKeyHold.of(statements, setup.spec, perKeyOf(setup));
  }

  /** Takes up to `options.limit` rows in `trx` (`run` runs in it): the rows as claimed, their attempt counted. */
  async take(trx: ClaimTransaction, run: TransactionRun, options: ClaimOptions): Promise<RawRow[]> {
    const { spec } = this.#setup;
    const fifo = this.#locksFifoGroupFirst ? { fifoLocked: (await run(this.#statements.lockFifoGroup(spec, options))).rows.length } : {};
    const rows = await this.#claimRows(trx, run, { ...options, ...fifo });
    if (rows.length === 0 || !this.#countsAfterClaim) return rows;
    await this.countAgain(
      run,
      rows.map((row) => row[spec.id.name]),
    );
    // Postgres returns the counted attempt; MySQL/MariaDB read the rows before `countAttempts`.
    for (const row of rows) asClaimed(spec, row);
    return rows;
  }

  /** Counts the attempt of `ids` where the claim does not count it itself (a deadlock's rollback undid it); nothing elsewhere. */
  async countAgain(run: TransactionRun, ids: readonly unknown[]): Promise<void> {
    if (this.#countsAfterClaim) await run(this.#statements.countAttempts(this.#setup.spec, ids));
  }

  /**
   * Runs the claim in `trx`; with ordered keys, holds each claimed row's key too (`OrderKeyHold`).
   * A row whose key is held elsewhere (it committed late, behind a row of its key in work) stays
   * out: its attempt is taken back where the claim counted it, and the claim runs again without it
   * (and without the rows already taken) for the places left, a few times at most. The refused row
   * stays locked by this transaction until it ends, so the claims beside this one pass over it.
   */
  async #claimRows(trx: ClaimTransaction, run: TransactionRun, options: ClaimOptions): Promise<RawRow[]> {
    const { spec } = this.#setup;
    const rows = (await run(this.#statements.claim(spec, options))).rows;
    const keys = this.#keys;
    if (keys === undefined || rows.length === 0) return rows;
    keys.releaseBeforeEnd(trx);
    const held = keys.slots();
    let { kept, refused } = await keys.take(run, rows, held);
    const left = [...(options.exclude ?? [])];
    for (let round = 1; refused.length > 0; round++) {
      // The claim counted the refused rows' attempts where it counts in the same statement (Postgres).
      if (spec.attempt !== undefined && this.#statements.countsInClaim) await run(this.#statements.uncountAttempts(spec, refused));
      left.push(...refused);
      if (kept.length >= options.limit || round > MAX_KEY_ROUNDS) break;
      const exclude = [...left, ...kept.map((row) => row[spec.id.name])];
      const more = (await run(this.#statements.claim(spec, { ...options, limit: options.limit - kept.length, exclude }))).rows;
      if (more.length === 0) break;
      const next = await keys.take(run, more, held);
      kept = [...kept, ...next.kept];
      refused = next.refused;
    }
    return kept;
  }
}
