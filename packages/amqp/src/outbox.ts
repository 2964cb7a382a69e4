import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import type { DeliveredOf, InboxQueue, Subscriber } from "@sqlinbox/runtime";
import { type OutboxMessage, outboxRelay } from "@sqlinbox/runtime/internal";
import type { ConfirmChannel, ConsumeMessage } from "amqplib";
import { type AmqpConnection, ConnectionSource } from "./connection.js";

/** How a RabbitMQ outbox relay sends a route's rows. */
export interface AmqpOutboxOptions<P> {
  /**
   * The connection the relay opens its confirm channel on (a new channel when a channel error closed it):
   * `() => amqp.connect(url)` to have the relay connect again after the broker closed the connection (a
   * restart, a network cut; the relay's `close()` closes what it opened), or a connection of your own,
   * which stays yours to close (once closed, every send fails until a new relay is made).
   */
  readonly connection: AmqpConnection;
  /** The exchange the rows are published to (declared beforehand); unset: the default exchange `""`, where the routing key names a queue. */
  readonly exchange?: string;
  /** The routing key: fixed, or a function of each row (`(order) => \`orders.${order.region}\``); unset: the queue's route name. */
  readonly routingKey?: string | ((payload: P, message: OutboxMessage<P>) => string);
  /** The message body; unset: the payload as JSON (content type `application/json`). */
  readonly encode?: (payload: P) => Buffer;
  /** The content type of an `encode`d body; unset: `application/json`. */
  readonly contentType?: string;
  /**
   * Publish with the `mandatory` flag (default true): a message no queue is bound for comes back to the relay
   * (`basic.return`) and fails its batch, instead of being confirmed and dropped. False: such a message is dropped.
   */
  readonly mandatory?: boolean;
}

/**
 * An outbox relay to RabbitMQ: a batch subscriber of `queue` that publishes every row of a claim on a confirm
 * channel (persistent, `message_id` = `<table>:<row id>`, the headers column's pairs as AMQP headers,
 * `traceparent` included), waits for the broker's confirms of the batch (`waitForConfirms`), and acks the
 * rows then. A message the broker nacked, returned as unroutable, or left unconfirmed when the channel closed
 * fails the batch: the queue's onError policy retries its rows. RabbitMQ does not deduplicate: rows sent again
 * reach the queue again under the same `message_id`, which the consumer deduplicates on (`amqpInbox` does).
 *
 * @example
 * const relay = amqpOutbox(InboxQueue.of(OrderOutbox, "orders.placed").batch(64), { connection: () => amqp.connect(url), exchange: "orders" });
 * app.onShutdown(() => relay.close());
 */
export function amqpOutbox<S extends AnyInboxSpec>(queue: InboxQueue<S>, options: AmqpOutboxOptions<DeliveredOf<S>>): AmqpOutboxRelay<S> {
  const { connection, exchange = "", routingKey = queue.name, encode, contentType = "application/json", mandatory = true } = options;
  const table = queue.spec.description.table;
  const source = new ConnectionSource(connection, `amqpOutbox (route "${queue.name}")`);
  const channels = new ConfirmChannels(source);
  const relay = outboxRelay(queue, { broker: "RabbitMQ" }, (messages) => {
    const opened = channels.get();
    const sent = messages.map(async (message) => {
      const { channel, returned } = await opened;
      const messageId = `${table}:${message.id}`;
      const to = typeof routingKey === "string" ? routingKey : routingKey(message.payload, message);
      const body = encode === undefined ? Buffer.from(JSON.stringify(message.payload)) : encode(message.payload);
      await new Promise<void>((resolve, reject) => {
        channel.publish(exchange, to, body, { persistent: true, messageId, headers: { ...message.headers }, contentType, mandatory }, (error) =>
          error ? reject(error) : resolve(),
        );
      });
      // A return comes before the confirm of its message (AMQP 0-9-1): confirmed but returned is unroutable.
      if (returned.delete(messageId)) throw new Error(`unroutable: no queue is bound for routing key "${to}" on exchange "${exchange}"`);
    });
    // The batch's confirms, awaited together; a message's own promise fails with its nack or return.
    const confirmed = opened.then(({ channel }) => channel.waitForConfirms());
    return sent.map((one) => Promise.all([one, confirmed]));
  });
  return Object.freeze({ ...relay, close: () => source.close() });
}

/** An outbox relay to RabbitMQ: a subscriber to include, and `close()` for the connections its factory opened. */
export type AmqpOutboxRelay<S extends AnyInboxSpec> = Subscriber<S> & {
  /** Closes the connection a `connection` function made (after the app stopped: `app.onShutdown`); a connection of your own stays open. */
  close(): Promise<void>;
};

interface Opened {
  readonly channel: ConfirmChannel;
  /** The message ids the broker returned as unroutable, until their confirm is seen. */
  readonly returned: Set<string>;
}

/** The relay's confirm channel, opened on first use and again after it closed (a channel error, or its connection closed). */
class ConfirmChannels {
  readonly #connection: ConnectionSource;
  #open: Promise<Opened> | undefined;

  constructor(connection: ConnectionSource) {
    this.#connection = connection;
  }

  get(): Promise<Opened> {
    if (this.#open !== undefined) return this.#open;
    const open = (async () => {
      const channel = await (await this.#connection.get()).createConfirmChannel();
      const returned = new Set<string>();
      channel.on("return", (message: ConsumeMessage) => {
        const id: unknown = message.properties.messageId;
        if (typeof id === "string") returned.add(id);
      });
      // A channel error closes it (its unconfirmed publishes fail with "channel closed"); the next batch opens another.
      channel.on("error", () => {});
      channel.on("close", () => {
        if (this.#open === open) this.#open = undefined;
      });
      return { channel, returned };
    })();
    open.catch(() => {
      if (this.#open === open) this.#open = undefined;
    });
    this.#open = open;
    return open;
  }
}
