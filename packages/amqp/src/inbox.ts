import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { consoleLogger, type Logger, type SqlBroker } from "@sqlinbox/runtime";
import { type Engine, type Inbound, InboxStore, type InboxRouteAllowed, type InboxWrite, inboxWriter, type PublishPayload, WriteBatcher } from "@sqlinbox/runtime/internal";
import type { Channel, ConsumeMessage } from "amqplib";
import { type AmqpConnection, ConnectionSource } from "./connection.js";

/** Where a RabbitMQ inbox bridge reads, and how it stores what it reads. */
export interface AmqpInboxOptions<P> {
  /**
   * The connection the bridge opens its channel on: `() => amqp.connect(url)` to have the bridge connect
   * and consume again, every `retryDelayMs`, after the broker closed the connection (a restart, a network
   * cut; `stop()` closes what it opened), or a connection of your own, which stays yours to close (once it
   * closed, consuming stops until `start()` on a bridge with a new connection).
   */
  readonly connection: AmqpConnection;
  /** The queue the bridge consumes (declared and bound beforehand); `start()` rejects when it does not exist. */
  readonly queue: string;
  /**
   * Unacked messages the broker hands the bridge ahead of the inserts (`basic.qos`, default 64), and the most one
   * insert stores: the messages that arrive while an insert runs are stored together by the next.
   */
  readonly prefetch?: number;
  /** The dedup key of a message; unset: its `message_id` (what `amqpOutbox` sets). A message without one is rejected (logged as an error). */
  readonly key?: (message: ConsumeMessage) => string | undefined;
  /** The payload from a message's body; unset: JSON. A throw rejects the message without requeue (logged as an error): it would fail every time. */
  readonly decode?: (content: Buffer, message: ConsumeMessage) => P;
  /** A failed insert gives the message back (`nack`, requeued) after this long, and a lost connection is tried again this often (ms, default 1000). */
  readonly retryDelayMs?: number;
  /** Where insert failures and rejected messages are logged (default: the console, warnings and errors). */
  readonly logger?: Logger;
}

/** What a bridge has done since it started. */
export interface InboxCounts {
  /** Messages stored as new rows. */
  readonly stored: number;
  /** Messages whose key a row already held: acked without a second row (redeliveries, a relay's resends). */
  readonly duplicates: number;
}

/** A running queue consumer that stores each message as a row. */
export interface AmqpInbox {
  /** Opens the channel and starts consuming; rejects when the queue does not exist. Callable again after the channel closed. */
  start(): Promise<void>;
  /** Cancels the consumer, lets the messages in work finish (their inserts and acks), and closes the channel (and the connection a `connection` function made). */
  stop(): Promise<void>;
  readonly counts: InboxCounts;
}

/**
 * An inbox bridge from a RabbitMQ queue: a consumer with manual acks and a prefetch whose each message becomes
 * a row of route `route`'s table, under its `message_id` (or `key`) as the table's dedup key, in delivery order
 * (the messages that arrive while an insert runs go together in the next, one multi-row insert where the engine
 * has RETURNING, their rows' ids in delivery order). The message is acked only after the insert committed; a message redelivered after
 * that (the ack was lost with the connection, the process died in between, the relay sent it again) finds its
 * key taken and is acked without a second row. The route's table needs a dedup key column (a compile error
 * otherwise); its headers column, when it has one, keeps the message's string headers (`traceparent` included).
 *
 * @example
 * const inbox = amqpInbox(broker, "payments", { connection: await amqp.connect(url), queue: "shop.payments" });
 * app.onStartup(() => inbox.start()).onShutdown(() => inbox.stop());
 */
export function amqpInbox<R extends Record<string, AnyInboxSpec>, N extends string, E extends Engine>(
  broker: SqlBroker<R, E>,
  route: N & InboxRouteAllowed<R, N>,
  options: AmqpInboxOptions<PublishPayload<R, N>>,
): AmqpInbox {
  const prefetch = options.prefetch ?? 64;
  if (!Number.isInteger(prefetch) || prefetch < 1) throw new RangeError(`amqpInbox: prefetch must be a positive integer, got ${String(prefetch)} (route "${route}")`);
  return new QueueInbox(
    inboxWriter(broker, route) as InboxWrite<unknown>,
    options as AmqpInboxOptions<unknown>,
    new ConnectionSource(options.connection, `amqpInbox (queue "${options.queue}")`),
  );
}

/** A message as the bridge holds it: the channel it came on settles it. */
interface Delivery {
  readonly channel: Channel;
  readonly message: ConsumeMessage;
}

class QueueInbox implements AmqpInbox {
  readonly #store: InboxStore<Delivery>;
  readonly #options: AmqpInboxOptions<unknown>;
  readonly #logger: Logger;
  #channel: Channel | undefined;
  #consumerTag: string | undefined;
  /** The inserts in order: the messages delivered while one runs go together in the next. */
  readonly #batcher: WriteBatcher<Delivery>;
  /** A channel's close after the writes before it (the queue was deleted). */
  #chain: Promise<void> = Promise.resolve();
  readonly #connection: ConnectionSource;
  #stopped = false;
  /** The loop that consumes again after the connection was lost (a `connection` function only). */
  #reconnecting: Promise<void> | undefined;

  constructor(write: InboxWrite<unknown>, options: AmqpInboxOptions<unknown>, connection: ConnectionSource) {
    const { queue, retryDelayMs = 1000 } = options;
    this.#options = options;
    this.#logger = options.logger ?? consoleLogger({ level: "warn" });
    this.#connection = connection;
    this.#store = new InboxStore<Delivery>(write, this.#logger, { queue }, async ({ channel, message }, key, error) => {
      const where = { queue, deliveryTag: message.fields.deliveryTag, key };
      this.#logger.warn({ ...where, err: error, retryDelayMs }, "inbox bridge: insert failed, message given back");
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
      try {
        channel.nack(message, false, true);
      } catch (closed) {
        this.#logger.warn({ ...where, err: closed }, "inbox bridge: message could not be settled, the broker redelivers it");
      }
    });
    this.#batcher = new WriteBatcher(
      options.prefetch ?? 64,
      (items) => this.#storeAll(items),
      (error, items) => {
        // Not expected (#storeAll settles each message itself): unacked, the messages come back with the channel's close.
        this.#logger.error({ err: error, queue: options.queue, messages: items.length }, "inbox bridge: a write failed unexpectedly");
      },
    );
  }

  get counts(): InboxCounts {
    return this.#store.counts;
  }

  async start(): Promise<void> {
    if (this.#channel !== undefined) return;
    this.#stopped = false;
    await this.#open();
  }

  async #open(): Promise<void> {
    const { queue, prefetch = 64 } = this.#options;
    const channel = await (await this.#connection.get()).createChannel();
    channel.on("error", (error: unknown) => this.#logger.error({ err: error, queue }, "inbox bridge: the channel failed"));
    // Closed by the broker or with the connection: the unacked messages go back to the queue.
    channel.on("close", () => {
      if (this.#channel !== channel) return;
      this.#channel = undefined;
      if (this.#connection.reconnects && !this.#stopped) {
        this.#logger.warn({ queue }, "inbox bridge: the channel closed; consuming again once the broker takes a connection");
        this.#reconnecting ??= this.#reconnect().finally(() => (this.#reconnecting = undefined));
      } else {
        this.#logger.error({ queue }, "inbox bridge: the channel closed, consuming stopped; start() again, or make a new bridge on a new connection if the connection closed");
      }
    });
    try {
      await channel.checkQueue(queue);
      await channel.prefetch(prefetch);
      const { consumerTag } = await channel.consume(queue, (message) => {
        if (message === null) {
          // The queue was deleted: nothing more comes on this channel; start() consumes again once the queue exists.
          this.#logger.error({ queue }, "inbox bridge: the broker cancelled the consumer (the queue was deleted); start() again once it exists");
          if (this.#channel === channel) this.#channel = undefined;
          this.#chain = this.#chain.then(() => this.#batcher.idle()).then(() => channel.close().catch(() => {}));
          return;
        }
        void this.#batcher.add({ channel, message });
      });
      this.#channel = channel;
      this.#consumerTag = consumerTag;
    } catch (error) {
      await channel.close().catch(() => {});
      throw error;
    }
  }

  /** Opens a channel every `retryDelayMs` until one consumes or the bridge stops. */
  async #reconnect(): Promise<void> {
    const { queue, retryDelayMs = 1000 } = this.#options;
    let failures = 0;
    while (!this.#stopped && this.#channel === undefined) {
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
      if (this.#stopped || this.#channel !== undefined) return;
      try {
        await this.#open();
        this.#logger.warn({ queue, failures }, "inbox bridge: consuming again");
      } catch (error) {
        // Logged the first time and every 30th after: a broker down for minutes writes a few lines.
        if (failures++ % 30 === 0) this.#logger.warn({ queue, err: error, failures }, "inbox bridge: cannot consume yet; trying again");
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#reconnecting;
    const channel = this.#channel;
    this.#channel = undefined;
    if (channel !== undefined) {
      if (this.#consumerTag !== undefined) await channel.cancel(this.#consumerTag).catch(() => {});
      await this.#batcher.idle();
      await this.#chain;
      // Closing the channel gives the broker back what it delivered and nobody acked.
      await channel.close().catch(() => {});
    } else {
      await this.#batcher.idle();
      await this.#chain;
    }
    await this.#connection.close();
  }

  /** Stores messages (in one write, else one by one: see InboxStore) and acks each whose row committed. */
  async #storeAll(deliveries: readonly Delivery[]): Promise<void> {
    const ready: Inbound<Delivery>[] = [];
    for (const delivery of deliveries) {
      const inbound = this.#inboundOf(delivery.channel, delivery.message);
      if (inbound !== undefined) ready.push({ item: delivery, inbound });
    }
    for (const { item, inbound } of await this.#store.store(ready)) this.#ack(item.channel, item.message, inbound.key);
  }

  /** The message as a row to store; `undefined` for one without a key or that cannot be decoded (rejected, logged). */
  #inboundOf(channel: Channel, message: ConsumeMessage): Inbound<Delivery>["inbound"] | undefined {
    const { queue, decode = (content: Buffer) => JSON.parse(content.toString("utf8")) as unknown } = this.#options;
    const id: unknown = message.properties.messageId;
    const key = this.#options.key === undefined ? (typeof id === "string" && id !== "" ? id : undefined) : this.#options.key(message);
    const where = { queue, deliveryTag: message.fields.deliveryTag, key };
    try {
      if (key === undefined) {
        this.#logger.error(where, "inbox bridge: message has no message_id (and no key option names one), rejected");
        channel.nack(message, false, false);
        return undefined;
      }
      try {
        return { key, payload: decode(message.content, message), headers: headersOf(message) };
      } catch (error) {
        this.#logger.error({ ...where, err: error }, "inbox bridge: message cannot be decoded, rejected");
        channel.nack(message, false, false);
        return undefined;
      }
    } catch (error) {
      // The channel closed under the message: the broker redelivers it.
      this.#logger.warn({ ...where, err: error }, "inbox bridge: message could not be settled, the broker redelivers it");
      return undefined;
    }
  }

  #ack(channel: Channel, message: ConsumeMessage, key: string): void {
    try {
      channel.ack(message);
    } catch (error) {
      // The channel closed under the message: the broker redelivers it, and its key dedups it.
      this.#logger.warn(
        { queue: this.#options.queue, deliveryTag: message.fields.deliveryTag, key, err: error },
        "inbox bridge: message could not be settled, the broker redelivers it",
      );
    }
  }
}

function headersOf(message: ConsumeMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.properties.headers ?? {})) {
    if (typeof value === "string") out[name] = value;
    else if (Buffer.isBuffer(value)) out[name] = value.toString("utf8");
  }
  return out;
}
