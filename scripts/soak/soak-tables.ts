/** The tables of the bridge soak: an ordered outbox (a customer's rows relayed one at a time, in id order) and an inbox that keeps handled rows. */
import { defineInbox, field } from "@sqlinbox/core";

export interface SoakOrder {
  readonly n: number;
  readonly customer: number;
}

/** The columns both tables share: a generated id, the attempt, the lease. */
const leased = () => ({ id: field.id().generated(), attempt: field.attempt().generated(), lockedUntil: field.lease("locked_until") });

/** The outbox: lease form, an order key per customer, headers (a traceparent travels), the order. */
export const outboxOf = (table: string) =>
  defineInbox({
    table,
    columns: {
      ...leased(),
      customer: field.orderKey("customer").holds<number>().type("bigint"),
      headers: field.headers(),
      payload: field.payload<SoakOrder>(),
    },
  });

/** The inbox: the message id as the dedup key; handled rows stay (processedAt), so a late redelivery still finds its key. */
export const inboxOf = (table: string) =>
  defineInbox({
    table,
    columns: {
      ...leased(),
      messageId: field.key("message_id"),
      processedAt: field.processedAt("processed_at"),
      payload: field.payload<SoakOrder>(),
    },
  });

/** Customers the orders are spread over (each an order key). */
export const CUSTOMERS = 50;
