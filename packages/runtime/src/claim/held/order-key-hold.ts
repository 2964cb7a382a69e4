import type { InboxDescription } from "@sqlinbox/core/internal";
import type { ClaimOptions, RawRow, RowLockStatements } from "@sqlinbox/kysely-dialects";
import { orderedKey } from "@sqlinbox/kysely-dialects/internal";
import type { CompiledQuery, QueryResult } from "kysely";

/** What holding the keys of a claim's rows left: the rows that may run (claim order kept) and the ids of those that may not. */
export interface HeldKeys {
  readonly kept: RawRow[];
  readonly refused: unknown[];
}

/**
 * Ordered keys in the row-lock form: a row in work is only a row lock, which the head rule's plain
 * read cannot see, so a row committed late (a smaller id than a row of its key already in work)
 * would pass it. The claim's transaction therefore also holds a lock on each claimed row's key, one
 * of `perKey` slots, for as long as it holds the row; a row whose key has no free slot is refused
 * (another row of its key is in work) and stays out of this claim.
 *
 * Slots are tracked per claim transaction: a key lock is re-entrant in its session, so two rows of
 * one key in one transaction (a shared claim with `perKey` > 1) must take two different slots, and
 * one statement carries rows of distinct keys only.
 */
export class OrderKeyHold {
  readonly #statements: RowLockStatements;
  readonly #spec: InboxDescription;
  readonly #options: Pick<ClaimOptions, "perKey">;
  readonly #column: string;
  readonly #perKey: number;

  private constructor(statements: RowLockStatements, spec: InboxDescription, options: Pick<ClaimOptions, "perKey">, column: string) {
    this.#statements = statements;
    this.#spec = spec;
    this.#options = options;
    this.#column = column;
    this.#perKey = options.perKey ?? 1;
  }

  /** The hold for a table with an ordered key (an order key, or a group with `perKey`); `undefined` otherwise. */
  static of(statements: RowLockStatements, spec: InboxDescription, options: Pick<ClaimOptions, "perKey">): OrderKeyHold | undefined {
    const key = orderedKey(spec, options);
    return key === undefined ? undefined : new OrderKeyHold(statements, spec, options, key.name);
  }

  /** Gives the locks back just before `trx` ends, where its end does not (MySQL/MariaDB session locks); on Postgres its end does. */
  releaseBeforeEnd(trx: { releaseBeforeEnd(query: CompiledQuery): void }): void {
    if (this.#statements.orderKeyLocksOutliveTransaction) trx.releaseBeforeEnd(this.#statements.releaseOrderKeys());
  }

  /** A fresh record of the slots one transaction holds, per key. */
  slots(): Map<string, number[]> {
    return new Map();
  }

  /**
   * Takes a slot of each row's key in the transaction `run` runs in; `held` is that transaction's
   * record (what it took before, added to).
   */
  async take(run: <R>(query: CompiledQuery<R>) => Promise<QueryResult<R>>, rows: readonly RawRow[], held: Map<string, number[]>): Promise<HeldKeys> {
    const id = this.#spec.id.name;
    const taken = new Set<RawRow>();
    const refused: unknown[] = [];
    let pending = rows;
    while (pending.length > 0) {
      // One row per key in each pass; a key's next row waits for the next pass.
      const seen = new Set<string>();
      const pass: RawRow[] = [];
      const later: RawRow[] = [];
      for (const row of pending) {
        const key = String(row[this.#column]);
        if (seen.has(key)) later.push(row);
        else {
          seen.add(key);
          pass.push(row);
        }
      }
      // Rows whose keys have the same free slots (usually all of them) go in one statement.
      const byFree = new Map<string, { slots: number[]; rows: RawRow[] }>();
      for (const row of pass) {
        const mine = held.get(String(row[this.#column])) ?? [];
        const slots = Array.from({ length: this.#perKey }, (_, s) => s).filter((s) => !mine.includes(s));
        if (slots.length === 0) {
          refused.push(row[id]);
          continue;
        }
        const group = byFree.get(slots.join(",")) ?? { slots, rows: [] };
        group.rows.push(row);
        byFree.set(slots.join(","), group);
      }
      for (const { slots, rows: group } of byFree.values()) {
        const query = this.#statements.lockOrderKeys(
          this.#spec,
          this.#options,
          group.map((row) => row[id]),
          slots,
        );
        const result = await run(query);
        const slotOf = new Map(result.rows.map((r) => [String(r[id]), r.order_slot]));
        for (const row of group) {
          const slot = slotOf.get(String(row[id]));
          if (slot === null || slot === undefined) {
            refused.push(row[id]);
            continue;
          }
          const key = String(row[this.#column]);
          held.set(key, [...(held.get(key) ?? []), Number(slot)]);
          taken.add(row);
        }
      }
      pending = later;
    }
    return { kept: rows.filter((row) => taken.has(row)), refused };
  }
}
