import { InboxSpec, column, payloadOf, type StandardSchemaLike } from "@sqlinbox/core/internal";
import { describe, expectTypeOf, test } from "vitest";
import { InboxQueue, subscriber } from "../../src/index.js";

interface Order {
  readonly sku: string;
  readonly quantity: number;
}
declare const OrderSchema: StandardSchemaLike<Order>;

describe("payload types", () => {
  test("a Standard Schema gives the handler its output type", () => {
    const spec = InboxSpec.table("orders", column("id").generated()).lease(column("locked_until")).payload(column("payload"), OrderSchema);
    subscriber(InboxQueue.of(spec, "orders"), async (order) => {
      expectTypeOf(order).toEqualTypeOf<Order>();
    });
  });

  test("payloadOf<T>() names the type without a check", () => {
    const spec = InboxSpec.table("orders", column("id").generated()).lease(column("locked_until")).payload(column("payload"), payloadOf<Order>());
    subscriber(InboxQueue.of(spec, "orders"), async (order) => {
      expectTypeOf(order).toEqualTypeOf<Order>();
      // @ts-expect-error a field the payload type does not have
      void order.price;
    });
  });
});
