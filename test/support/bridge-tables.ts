/**
 * The tables the broker bridges' tests (packages/nats, redis, amqp, mqtt) run on, and what their outbox tests publish: an outbox described in
 * each claim form, an ordered outbox (an order key: lease and row lock), and an inbox with a dedup key.
 * Each is created from its description, so its id never repeats (SQLite: AUTOINCREMENT), as an outbox needs.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { defineInbox, field } from "@sqlinbox/core";
import { type Kysely, type Transaction, sql } from "kysely";

// biome-ignore lint/suspicious/noExplicitAny: the tables are made at run time
type AnyDb = Kysely<any>;

export interface Order {
  readonly n: number;
  readonly customer: number;
}

/** An outbox in `form`: id, attempt, headers (where `traceparent` travels), the payload. */
export function outboxSpecOf(table: string, form: ClaimForm) {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    headers: field.headers(),
    payload: field.payload<Order>(),
  };
  switch (form) {
    case "lease":
      return defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } });
    case "advisory":
      return defineInbox({ table, columns, advisoryLock: "order-{id}" });
    case "rowLock":
      return defineInbox({ table, columns });
  }
}

/** An outbox whose rows of one customer run one at a time, in id order (lease, or row lock). */
export function orderedOutboxSpecOf(table: string, form: "lease" | "rowLock") {
  const columns = {
    id: field.id().generated(),
    attempt: field.attempt().generated(),
    customer: field.orderKey("customer").holds<number>().type("bigint"),
    payload: field.payload<Order>(),
  };
  return form === "lease" ? defineInbox({ table, columns: { ...columns, lockedUntil: field.lease("locked_until") } }) : defineInbox({ table, columns });
}

/** An inbox a bridge writes: the message id as the dedup key, its headers, the payload. */
export function inboxSpecOf(table: string) {
  return defineInbox({
    table,
    columns: {
      id: field.id().generated(),
      attempt: field.attempt().generated(),
      lockedUntil: field.lease("locked_until"),
      messageId: field.key("message_id"),
      headers: field.headers(),
      payload: field.payload<Order>(),
    },
  });
}

/** The forms an engine runs: SQLite has no row locks. */
export function formsOn(engine: "sqlite" | "postgres" | "mariadb"): readonly ClaimForm[] {
  return engine === "sqlite" ? ["lease", "advisory"] : ["rowLock", "lease", "advisory"];
}

/** Row n's W3C `traceparent` (trace id n + 1: an all-zero trace id is not valid). */
export const traceparentOf = (n: number): string => `00-${(n + 1).toString(16).padStart(32, "0")}-${"1".padStart(16, "0")}-01`;

/**
 * What each outbox test publishes: orders 0–59 in six transactions of ten, each with its traceparent, and
 * order 999 in a transaction that rolls back (never relayed). `publish` is the route's publish.
 */
export async function publishSixtyOrders(
  db: AnyDb,
  // biome-ignore lint/suspicious/noExplicitAny: any database's transaction
  publish: (order: Order, options: { readonly via: Transaction<any>; readonly headers?: Record<string, string> }) => Promise<unknown>,
): Promise<void> {
  for (let t = 0; t < 6; t++)
    await db.transaction().execute(async (trx) => {
      for (let i = 0; i < 10; i++) {
        const n = t * 10 + i;
        await publish({ n, customer: n % 3 }, { via: trx, headers: { traceparent: traceparentOf(n) } });
      }
    });
  await db
    .transaction()
    .execute(async (trx) => {
      await publish({ n: 999, customer: 0 }, { via: trx });
      throw new Error("rolled back");
    })
    .catch(() => {});
}

/** How many rows a table holds. */
export async function rowsIn(db: AnyDb, table: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql.id(table)}`.execute(db);
  return Number(rows[0]?.n);
}
