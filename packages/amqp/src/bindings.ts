/** What the AsyncAPI channel binding says of a RabbitMQ route: the exchange a relay publishes to, or the queue a bridge reads. */
export type AmqpChannelBindingOptions =
  | {
      /** The exchange `amqpOutbox` publishes to (its `exchange` option): the channel's address is the routing key. */
      readonly exchange: {
        readonly name: string;
        readonly type: "topic" | "direct" | "fanout" | "default" | "headers";
        readonly durable?: boolean;
        readonly autoDelete?: boolean;
        readonly vhost?: string;
      };
    }
  | {
      /** The queue `amqpInbox` consumes (its `queue` option): the channel's address is the queue. */
      readonly queue: { readonly name: string; readonly durable?: boolean; readonly exclusive?: boolean; readonly autoDelete?: boolean; readonly vhost?: string };
    };

/**
 * The AsyncAPI 3 channel bindings of a RabbitMQ route (AMQP 0-9-1 channel binding 0.3.0), for the route's
 * `bindings` in `asyncApiDocument` of `@sqlinbox/cli`: `is: "routingKey"` with the exchange, or `is: "queue"`
 * with the queue. `durable` defaults to true (what the relay's persistent messages need to survive a restart).
 *
 * @example
 * asyncApiDocument(info, [{ name: "orders.placed", spec: OrderOutbox, bindings: amqpChannelBindings({ exchange: { name: "orders", type: "topic" } }) }]);
 */
export function amqpChannelBindings(options: AmqpChannelBindingOptions): { readonly amqp: Record<string, unknown> } {
  if ("exchange" in options) {
    const { name, type, durable = true, ...rest } = options.exchange;
    if (name.length > 255) throw new RangeError(`amqpChannelBindings: the exchange name is longer than 255 characters ("${name.slice(0, 40)}…")`);
    return { amqp: { is: "routingKey", exchange: { name, type, durable, ...rest }, bindingVersion: "0.3.0" } };
  }
  const { name, durable = true, ...rest } = options.queue;
  if (name.length > 255) throw new RangeError(`amqpChannelBindings: the queue name is longer than 255 characters ("${name.slice(0, 40)}…")`);
  return { amqp: { is: "queue", queue: { name, durable, ...rest }, bindingVersion: "0.3.0" } };
}
