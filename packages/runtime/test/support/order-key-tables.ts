/**
 * The ordered-key tests' queue: id, attempt, retry_after, priority, an order key (`account_id`), the
 * payload, and in the lease form the lease column; created by `createInboxTable` (so the order key's
 * index is the one the DDL makes). Handlers write `start` and `end` events into the fifo tests'
 * results table (`grp` holds the key, `n` the row id).
 */
import { defineInbox, field, type ClaimForm } from "@sqlinbox/core/internal";
import { sql } from "kysely";
import type { AnyKysely } from "../../src/drivers/database.js";
import type { ResultEvent } from "./fifo-tables.js";
import { deferred, type Deferred } from "./fixtures.js";

export interface LedgerJob {
  readonly account: number;
}

/** The queue in `form` (row lock or lease: an order key and an advisory key exclude each other). */
export function orderedSpecOf(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    retry_after: field.retryAfter(),
    priority: field.priority(),
    account: field.orderKey("account_id").holds<number>().type("bigint"),
    payload: field.payload<LedgerJob>(),
  };
  if (form === "lease") return defineInbox({ table, columns: { ...columns, locked_until: field.lease() } });
  return defineInbox({ table, columns });
}

export interface LedgerRow {
  readonly account: number;
  readonly priority?: number;
  readonly retryAfter?: unknown;
}

/** Inserts rows behind the broker's back, in order (one statement per chunk, so ids follow the list). */
export async function insertLedgerRows(db: AnyKysely, table: string, rows: readonly LedgerRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto(table)
      .values(
        rows.slice(i, i + 500).map((r) => ({
          account_id: r.account,
          priority: r.priority ?? 0,
          retry_after: r.retryAfter ?? null,
          payload: Buffer.from(JSON.stringify({ account: r.account })),
        })),
      )
      .execute();
  }
}

/** Every row's id and key, in id order. */
export async function ledgerIds(db: AnyKysely, table: string): Promise<Array<{ id: number; account: number }>> {
  const { rows } = await sql<Record<string, unknown>>`SELECT id, account_id FROM ${sql.id(table)} ORDER BY id`.execute(db);
  return rows.map((r) => ({ id: Number(r["id"]), account: Number(r["account_id"]) }));
}

/** The most keys one process had in work at once, per process id, from the events in seq order. */
export function keysInWorkPerProcess(events: readonly ResultEvent[]): Map<number, number> {
  const inWork = new Map<number, Map<string, number>>();
  const most = new Map<number, number>();
  for (const e of events) {
    const keys = inWork.get(e.pid) ?? new Map<string, number>();
    inWork.set(e.pid, keys);
    const count = (keys.get(e.grp) ?? 0) + (e.event === "start" ? 1 : -1);
    if (count === 0) keys.delete(e.grp);
    else keys.set(e.grp, count);
    most.set(e.pid, Math.max(most.get(e.pid) ?? 0, keys.size));
  }
  return most;
}

/** The handler's side: which rows started, which are in work, and a gate per row that holds it until released. */
export class Gates {
  readonly started: number[] = [];
  readonly #inWork = new Set<number>();
  readonly #gates = new Map<number, Deferred>();
  most = 0;

  async run(id: number): Promise<void> {
    this.started.push(id);
    this.#inWork.add(id);
    this.most = Math.max(this.most, this.#inWork.size);
    await this.#gate(id).promise;
    this.#inWork.delete(id);
  }

  release(id: number): void {
    this.#gate(id).resolve();
  }

  releaseAll(): void {
    for (const id of this.started) this.release(id);
  }

  #gate(id: number): Deferred {
    let gate = this.#gates.get(id);
    if (gate === undefined) {
      gate = deferred();
      this.#gates.set(id, gate);
    }
    return gate;
  }
}
