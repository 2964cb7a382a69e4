import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { DeliveredOf, InboxQueue, Subscriber } from "@sqlinbox/runtime";
import { type OutboxMessage, outboxRelay } from "@sqlinbox/runtime/internal";
import type { MqttClient } from "mqtt";

/** The MQTT 5 user property that carries a message's id (`<table>:<row id>`), which `mqttInbox` stores as the dedup key. */
export const ID_PROPERTY = "sqlinbox-id";

/** How an MQTT outbox relay sends a route's rows. */
export interface MqttOutboxOptions<P> {
  /** A connected MQTT 5 client (`mqtt.connect(url, { protocolVersion: 5 })`). */
  readonly client: MqttClient;
  /** The topic: fixed, or a function of each row (`(order) => \`orders/${order.region}\``); unset: the queue's route name. */
  readonly topic?: string | ((payload: P, message: OutboxMessage<P>) => string);
  /** The message body; unset: the payload as JSON (content type `application/json`). */
  readonly encode?: (payload: P) => Buffer | string;
  /** How long a publish waits for its PUBACK before it counts as failed (ms, default 10000). */
  readonly ackTimeoutMs?: number;
}

/**
 * An outbox relay to an MQTT 5 broker: a batch subscriber of `queue` that publishes every row of a claim at
 * QoS 1 (the id `<table>:<row id>` in the user property `sqlinbox-id`, the headers column's pairs as user
 * properties, `traceparent` included), and acks the rows once every PUBACK came back with a success code. A
 * publish refused (a PUBACK reason code of 0x80 or more) or not acknowledged within `ackTimeoutMs` fails the
 * batch: the queue's onError policy retries its rows. QoS 1 is at least once: a message the client sends again
 * after a reconnect, and rows sent again, reach subscribers again under the same `sqlinbox-id`, which the
 * consumer deduplicates on (`mqttInbox` does).
 *
 * @example
 * const relay = mqttOutbox(InboxQueue.of(OrderOutbox, "orders.placed").batch(64), { client, topic: "orders/placed" });
 */
export function mqttOutbox<S extends AnyInboxSpec>(queue: InboxQueue<S>, options: MqttOutboxOptions<DeliveredOf<S>>): Subscriber<S> {
  const { client, topic = queue.name, encode = (payload: unknown) => JSON.stringify(payload), ackTimeoutMs = 10_000 } = options;
  if (client.options.protocolVersion !== 5)
    throw new TypeError(
      `mqttOutbox (route "${queue.name}"): the client speaks MQTT protocol version ${String(client.options.protocolVersion ?? 4)}; connect it with { protocolVersion: 5 }: the row id and headers travel as MQTT 5 user properties`,
    );
  const table = queue.spec.description.table;
  return outboxRelay(queue, { broker: "MQTT" }, (messages) =>
    messages.map(async (message) => {
      const to = typeof topic === "string" ? topic : topic(message.payload, message);
      const userProperties = { ...message.headers, [ID_PROPERTY]: `${table}:${message.id}` };
      const published = client.publishAsync(to, encode(message.payload), { qos: 1, properties: { userProperties, contentType: "application/json" } });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no PUBACK within ${ackTimeoutMs} ms (topic "${to}")`)), ackTimeoutMs);
      });
      try {
        await Promise.race([published, timeout]);
      } finally {
        clearTimeout(timer);
        // A publish that lost the race may still fail later: its outcome is the batch's already.
        published.catch(() => {});
      }
    }),
  );
}
