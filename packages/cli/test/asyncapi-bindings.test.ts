/**
 * The channel bindings the broker packages write (`natsChannelBindings`, `redisChannelBindings`,
 * `amqpChannelBindings`, `mqttChannelBindings`) in one document of `asyncApiDocument`: the AsyncAPI parser
 * finds no error, each channel carries its binding, and a binding the AMQP binding schema refuses is reported.
 */
import { Parser } from "@asyncapi/parser";
import { describe, expect, test } from "vitest";
import { amqpChannelBindings } from "../../amqp/src/index.js";
import { mqttChannelBindings } from "../../mqtt/src/index.js";
import { natsChannelBindings } from "../../nats/src/index.js";
import { redisChannelBindings } from "../../redis/src/index.js";
import { asyncApiDocument } from "../src/asyncapi.js";
import { Orders } from "./support/fixtures/asyncapi-routes.js";

async function parseErrors(document: unknown): Promise<string[]> {
  const { diagnostics } = await new Parser().parse(JSON.stringify(document));
  return diagnostics.filter((d) => d.severity === 0).map((d) => `${d.path.join(".")}: ${d.message}`);
}

describe("broker channel bindings", () => {
  test("a document with the four brokers' bindings parses without an error", async () => {
    const routes = [
      { name: "orders.nats", spec: Orders, bindings: natsChannelBindings() },
      { name: "orders.redis", spec: Orders, bindings: redisChannelBindings() },
      { name: "orders.amqp", spec: Orders, bindings: amqpChannelBindings({ exchange: { name: "orders", type: "topic" } }) },
      { name: "billing.orders", spec: Orders, bindings: amqpChannelBindings({ queue: { name: "billing.orders", exclusive: false } }) },
      { name: "orders/mqtt", spec: Orders, bindings: mqttChannelBindings() },
    ];
    const { document } = asyncApiDocument({ title: "shop", version: "1.0.0" }, routes);
    expect(await parseErrors(document)).toEqual([]);
    const channels = document["channels"] as Record<string, { bindings?: unknown }>;
    expect(channels["orders.amqp"]?.bindings).toEqual({ amqp: { is: "routingKey", exchange: { name: "orders", type: "topic", durable: true }, bindingVersion: "0.3.0" } });
    expect(channels["billing.orders"]?.bindings).toEqual({ amqp: { is: "queue", queue: { name: "billing.orders", durable: true, exclusive: false }, bindingVersion: "0.3.0" } });
    expect(channels["orders_mqtt"]?.bindings).toEqual({ mqtt: {} });
    expect(channels["orders.nats"]?.bindings).toEqual({ nats: {} });
    expect(channels["orders.redis"]?.bindings).toEqual({ redis: {} });
  });

  test("the parser reports an AMQP binding its schema refuses: the check above can fail", async () => {
    const { document } = asyncApiDocument({ title: "shop", version: "1.0.0" }, [
      { name: "orders", spec: Orders, bindings: { amqp: { is: "routingKey", exchange: { name: "orders", type: "nonsense" }, bindingVersion: "0.3.0" } } },
    ]);
    expect((await parseErrors(document)).length).toBeGreaterThan(0);
  });

  test("an AMQP name longer than 255 characters is refused", () => {
    expect(() => amqpChannelBindings({ exchange: { name: "x".repeat(256), type: "topic" } })).toThrow(/amqpChannelBindings: the exchange name is longer than 255 characters/);
    expect(() => amqpChannelBindings({ queue: { name: "q".repeat(256) } })).toThrow(/amqpChannelBindings: the queue name is longer than 255 characters/);
  });
});
