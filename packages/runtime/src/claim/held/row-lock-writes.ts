import type { ErrorPlace } from "@sqlinbox/core/internal";
import type { RowLockStatements } from "@sqlinbox/kysely-dialects";
import type { CompiledQuery, QueryResult } from "kysely";
import { MAX_ACKS_PER_STATEMENT, type ClaimSetup } from "../claim-strategy.js";
import type { ClaimTransaction } from "./claim-transaction.js";
import { heldSettlement } from "./held-delivery.js";
import type { Settlement } from "../settlement.js";

/**
 * What the row-lock form writes in a claim's transaction: a statement (through the database's fault
 * hook and activity count), a settlement's statements with its follow-up (a workflow step's
 * release) before the commit, and a shared claim's acks in as few statements as the engine allows.
 */
export class RowLockWrites {
  readonly #setup: ClaimSetup;
  readonly #statements: RowLockStatements;

  constructor(setup: ClaimSetup, statements: RowLockStatements) {
    this.#setup = setup;
    this.#statements = statements;
  }

  run<R>(trx: ClaimTransaction, kind: "claim" | "settle", query: CompiledQuery<R>): Promise<QueryResult<R>> {
    const injected = this.#setup.database.fault?.(kind);
    if (injected) return Promise.reject(injected);
    return this.#setup.database.activity.track(() => trx.executeQuery(query));
  }

  /** Runs statements in turn, in the transaction. */
  async runAll(trx: ClaimTransaction, queries: readonly CompiledQuery[]): Promise<void> {
    for (const query of queries) await this.run(trx, "settle", query);
  }

  /** One row's settlement statements. */
  settlement(id: unknown, settlement: Settlement, place: ErrorPlace, attempt: number | undefined): CompiledQuery[] {
    const { spec, clock, database, deadLetter } = this.#setup;
    return heldSettlement(this.#statements, spec, id, settlement, clock.now(), { deadLetters: database.dialect.deadLetter, target: deadLetter, attempt, place });
  }

  /** One row's settlement and its follow-up, in the transaction, before its commit. */
  async settle(trx: ClaimTransaction, id: unknown, settlement: Settlement, place: ErrorPlace, attempt: number | undefined): Promise<void> {
    await this.runAll(trx, this.settlement(id, settlement, place, attempt));
    const { followUp } = this.#setup;
    if (followUp?.wants(settlement) === true) await followUp.run((q) => this.run(trx, "settle", q), id, settlement);
  }

  /** Acks rows of a shared claim in its transaction: one statement per `MAX_ACKS_PER_STATEMENT` rows. */
  async ackMany(trx: ClaimTransaction, ids: readonly unknown[]): Promise<void> {
    if (trx.isRolledBack) throw new Error("the transaction was rolled back at shutdown");
    const now = this.#setup.clock.now();
    for (let i = 0; i < ids.length; i += MAX_ACKS_PER_STATEMENT) {
      const chunk = ids.length <= MAX_ACKS_PER_STATEMENT ? ids : ids.slice(i, i + MAX_ACKS_PER_STATEMENT);
      await this.run(trx, "settle", this.#statements.settleAckMany(this.#setup.spec, chunk, now));
    }
  }
}
