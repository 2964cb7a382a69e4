/** The bridges are typed by the route: the outbox's subject and encode take its payload, the inbox's decode returns it. */
import type { JetStreamClient } from "@nats-io/jetstream";
import { defineInbox, field } from "@sqlinbox/core";
import { InboxQueue, SqlBroker } from "@sqlinbox/runtime";
import { describe, expectTypeOf, test } from "vitest";
import { natsInbox, natsOutbox } from "../src/index.js";

interface Order {
  readonly id: string;
  readonly region: "eu" | "us";
}
const Outbox = defineInbox({ table: "order_outbox", columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
const Inbox = defineInbox({
  table: "payment_inbox",
  columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), messageId: field.key("message_id"), payload: field.payload<Order>() },
});
const NoKey = defineInbox({ table: "plain", columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
declare const js: JetStreamClient;
const broker = SqlBroker.fromUrl("sqlite:app.db").route(Inbox, "payments").route(NoKey, "plain");

describe("natsOutbox", () => {
  test("subject and encode receive the route's payload", () => {
    natsOutbox(InboxQueue.of(Outbox, "orders"), {
      js,
      subject: (order) => {
        expectTypeOf(order).toEqualTypeOf<Order>();
        return `orders.${order.region}`;
      },
      encode: (order) => new TextEncoder().encode(order.id),
    });
    // @ts-expect-error a subject function reads the payload's fields, and Order has no `country`
    natsOutbox(InboxQueue.of(Outbox, "orders"), { js, subject: (order) => `orders.${order.country}` });
  });
});

describe("natsInbox", () => {
  test("decode returns the route's payload; a route without a dedup key, or unknown to the broker's type, does not compile", () => {
    natsInbox(broker, "payments", { js, stream: "PAYMENTS", consumer: "shop", decode: (): Order => ({ id: "o-1", region: "eu" }) });
    // @ts-expect-error decode must return an Order
    natsInbox(broker, "payments", { js, stream: "PAYMENTS", consumer: "shop", decode: () => ({ id: 1 }) });
    // @ts-expect-error the route's table has no dedup key column
    natsInbox(broker, "plain", { js, stream: "PAYMENTS", consumer: "shop" });
    // @ts-expect-error the broker's type routes no "refunds"
    natsInbox(broker, "refunds", { js, stream: "PAYMENTS", consumer: "shop" });
  });
});
