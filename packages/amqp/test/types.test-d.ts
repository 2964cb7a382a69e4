/** The RabbitMQ bridges are typed by the route: the outbox's routing key and encode take its payload, the inbox's decode returns it. */
import { defineInbox, field } from "@sqlinbox/core";
import { InboxQueue, SqlBroker } from "@sqlinbox/runtime";
import type { ChannelModel } from "amqplib";
import { describe, expectTypeOf, test } from "vitest";
import { amqpChannelBindings, amqpInbox, amqpOutbox } from "../src/index.js";

interface Order {
  readonly id: string;
  readonly region: "eu" | "us";
}
const Outbox = defineInbox({ table: "order_outbox", columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
const Inbox = defineInbox({
  table: "order_inbox",
  columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), messageId: field.key("message_id"), payload: field.payload<Order>() },
});
const NoKey = defineInbox({ table: "plain", columns: { id: field.id().generated(), lockedUntil: field.lease("locked_until"), payload: field.payload<Order>() } });
declare const connection: ChannelModel;
const broker = SqlBroker.fromUrl("postgres://app@db/shop").route(Inbox, "orders.in").route(NoKey, "plain");

describe("amqp bridges", () => {
  test("typed by the route", () => {
    amqpOutbox(InboxQueue.of(Outbox, "orders"), {
      connection,
      exchange: "orders",
      routingKey: (order) => {
        expectTypeOf(order).toEqualTypeOf<Order>();
        return `orders.${order.region}`;
      },
      encode: (order) => Buffer.from(order.id),
    });
    amqpInbox(broker, "orders.in", { connection, queue: "orders", decode: (content): Order => JSON.parse(content.toString()) as Order });
    // @ts-expect-error decode must return an Order
    amqpInbox(broker, "orders.in", { connection, queue: "orders", decode: () => 42 });
    // @ts-expect-error the route's table has no dedup key column
    amqpInbox(broker, "plain", { connection, queue: "orders" });
    // @ts-expect-error an exchange binding names the exchange's type
    amqpChannelBindings({ exchange: { name: "orders" } });
  });
});
