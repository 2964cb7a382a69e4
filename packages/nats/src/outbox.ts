import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { DeliveredOf, InboxQueue, Subscriber } from "@sqlinbox/runtime";
import { type OutboxMessage, outboxRelay } from "@sqlinbox/runtime/internal";

/** How a NATS outbox relay sends a route's rows. */
export interface NatsOutboxOptions<P> {
  /** The JetStream client the rows are published through (`jetstream(nc)`). */
  readonly js: JetStreamClient;
  /** The subject: fixed, or a function of each row (`(order) => \`orders.${order.region}\``); unset: the queue's route name. */
  readonly subject?: string | ((payload: P, message: OutboxMessage<P>) => string);
  /** The message body; unset: the payload as JSON. */
  readonly encode?: (payload: P) => Uint8Array;
  /** How long a publish waits for its JetStream ack before it counts as failed (ms); unset: the client's default (5 s). */
  readonly ackTimeoutMs?: number;
}

const encoder = new TextEncoder();
const json = (payload: unknown): Uint8Array => encoder.encode(JSON.stringify(payload));

/**
 * An outbox relay to JetStream: a batch subscriber of `queue` that publishes every row of a claim (the
 * headers column's pairs as NATS headers, `traceparent` included; `Nats-Msg-Id` = `<table>:<row id>`), then
 * awaits every publish ack and acks the rows. A publish JetStream did not acknowledge (the server is down,
 * the stream refused it, the ack timed out) fails the batch: the queue's onError policy retries its rows,
 * and the stream's duplicate window drops the copies of rows it had already stored.
 *
 * @example
 * const relay = natsOutbox(InboxQueue.of(OrderOutbox, "orders.placed").batch(64), { js: jetstream(nc) });
 * app.withBroker(broker.route(OrderOutbox, "orders.placed"), (b) => b.include(relay));
 */
export function natsOutbox<S extends AnyInboxSpec>(queue: InboxQueue<S>, options: NatsOutboxOptions<DeliveredOf<S>>): Subscriber<S> {
  const { js, subject = queue.name, encode = json, ackTimeoutMs } = options;
  const table = queue.spec.description.table;
  return outboxRelay(queue, { broker: "JetStream" }, (messages) =>
    messages.map((message) => {
      const headers = natsHeaders();
      for (const [name, value] of Object.entries(message.headers)) headers.set(name, value);
      const to = typeof subject === "string" ? subject : subject(message.payload, message);
      return js.publish(to, encode(message.payload), { msgID: `${table}:${message.id}`, headers, ...(ackTimeoutMs === undefined ? {} : { timeout: ackTimeoutMs }) });
    }),
  );
}
