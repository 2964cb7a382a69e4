/** The MQTT bridges are typed by the route: the outbox's topic and encode take its payload, the inbox's decode returns it. */
import { defineInbox, field } from "@sqlinbox/core";
import { InboxQueue, SqlBroker } from "@sqlinbox/runtime";
import type { MqttClient } from "mqtt";
import { describe, expectTypeOf, test } from "vitest";
import { mqttInbox, mqttOutbox } from "../src/index.js";

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
declare const client: MqttClient;
const broker = SqlBroker.fromUrl("postgres://app@db/shop").route(Inbox, "orders.in").route(NoKey, "plain");
const url = "mqtt://127.0.0.1:1883";

describe("mqtt bridges", () => {
  test("typed by the route", () => {
    mqttOutbox(InboxQueue.of(Outbox, "orders"), {
      client,
      topic: (order) => {
        expectTypeOf(order).toEqualTypeOf<Order>();
        return `orders/${order.region}`;
      },
      encode: (order) => order.id,
    });
    mqttInbox(broker, "orders.in", { url, clientId: "shop", topic: "orders/#", decode: (payload): Order => JSON.parse(payload.toString()) as Order });
    // @ts-expect-error decode must return an Order
    mqttInbox(broker, "orders.in", { url, clientId: "shop", topic: "orders/#", decode: () => 42 });
    // @ts-expect-error the route's table has no dedup key column
    mqttInbox(broker, "plain", { url, clientId: "shop", topic: "orders/#" });
  });
});
