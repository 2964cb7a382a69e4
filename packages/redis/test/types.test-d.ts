/** The Redis bridges are typed by the route: the outbox's stream and encode take its payload, the inbox's decode returns it. */
import { defineInbox, field } from "@sqlinbox/core";
import { InboxQueue, SqlBroker } from "@sqlinbox/runtime";
import type { Redis } from "ioredis";
import { describe, expectTypeOf, test } from "vitest";
import { redisInbox, redisOutbox } from "../src/index.js";

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
declare const redis: Redis;
const broker = SqlBroker.fromUrl("postgres://app@db/shop").route(Inbox, "orders.in").route(NoKey, "plain");

describe("redis bridges", () => {
  test("typed by the route", () => {
    redisOutbox(InboxQueue.of(Outbox, "orders"), {
      redis,
      stream: (order) => {
        expectTypeOf(order).toEqualTypeOf<Order>();
        return `orders.${order.region}`;
      },
    });
    redisInbox(broker, "orders.in", { redis, stream: "orders", group: "g", consumer: "c", decode: (text): Order => JSON.parse(text) as Order });
    // @ts-expect-error decode must return an Order
    redisInbox(broker, "orders.in", { redis, stream: "orders", group: "g", consumer: "c", decode: () => 42 });
    // @ts-expect-error the route's table has no dedup key column
    redisInbox(broker, "plain", { redis, stream: "orders", group: "g", consumer: "c" });
  });
});
