/**
 * The tables the broker bridges' tests (packages/nats, packages/redis) run on: an outbox described in
 * each claim form, an ordered outbox (an order key: lease and row lock), and an inbox with a dedup key.
 * Each is created from its description, so its id never repeats (SQLite: AUTOINCREMENT), as an outbox needs.
 */
import type { ClaimForm } from "@sqlinbox/core/internal";
import { defineInbox, field } from "@sqlinbox/core";

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
