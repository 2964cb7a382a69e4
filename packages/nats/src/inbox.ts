import type { ConsumerMessages, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { consoleLogger, type Logger, type SqlBroker } from "@sqlinbox/runtime";
import { type Engine, type Inbound, InboxStore, type InboxRouteAllowed, type InboxWrite, inboxWriter, type PublishPayload, WriteBatcher } from "@sqlinbox/runtime/internal";

/** Where a NATS inbox bridge reads, and how it stores what it reads. */
export interface NatsInboxOptions<P> {
  /** The JetStream client (`jetstream(nc)`). */
  readonly js: JetStreamClient;
  readonly stream: string;
  /** A durable pull consumer of `stream`, made beforehand (its `ack_wait` is how long an unacked message waits before it comes back). */
  readonly consumer: string;
  /** The payload from a message's body; unset: JSON. A throw terminates the message (logged as an error): it would fail every time. */
  readonly decode?: (data: Uint8Array, message: JsMsg) => P;
  /**
   * Messages pulled ahead of the inserts (default 64), and the most one insert stores: the messages that
   * arrive while an insert runs are stored together by the next.
   */
  readonly maxMessages?: number;
  /** A failed insert gives the message back (`nak`) to come again after this long (ms, default 1000). */
  readonly retryDelayMs?: number;
  /** Where insert failures and undecodable messages are logged (default: the console, warnings and errors). */
  readonly logger?: Logger;
}

/** What a bridge has done since it started. */
export interface InboxCounts {
  /** Messages stored as new rows. */
  readonly stored: number;
  /** Messages whose key a row already held: acked without a second row (redeliveries, republished ids). */
  readonly duplicates: number;
}

/** A running JetStream consumer that stores each message as a row. */
export interface NatsInbox {
  /** Starts consuming; rejects when the stream or the consumer does not exist. */
  start(): Promise<void>;
  /** Stops pulling, lets the message in work finish (its insert and ack), and resolves. */
  stop(): Promise<void>;
  readonly counts: InboxCounts;
}

/**
 * An inbox bridge from JetStream: a durable consumer whose each message becomes a row of route `route`'s
 * table, under its message id (`Nats-Msg-Id`, else `<stream>:<stream sequence>`) as the table's dedup key.
 * The message is acked only after the insert committed; a message redelivered after that (its ack was lost,
 * the process died in between) finds its key taken and is acked without a second row. The route's table
 * needs a dedup key column (a compile error otherwise); its headers column, when it has one, keeps the
 * message's headers (`traceparent` included). Messages that arrive while an insert runs are stored together
 * by the next (one multi-row insert where the engine has RETURNING), each acked once it committed.
 *
 * @example
 * const inbox = natsInbox(broker, "payments", { js, stream: "PAYMENTS", consumer: "shop" });
 * app.onStartup(() => inbox.start()).onShutdown(() => inbox.stop());
 */
export function natsInbox<R extends Record<string, AnyInboxSpec>, N extends string, E extends Engine>(
  broker: SqlBroker<R, E>,
  route: N & InboxRouteAllowed<R, N>,
  options: NatsInboxOptions<PublishPayload<R, N>>,
): NatsInbox {
  return new JetStreamInbox(inboxWriter(broker, route) as InboxWrite<unknown>, options as NatsInboxOptions<unknown>);
}

const decoder = new TextDecoder();
const json = (data: Uint8Array): unknown => JSON.parse(decoder.decode(data));

class JetStreamInbox implements NatsInbox {
  readonly #store: InboxStore<JsMsg>;
  readonly #options: NatsInboxOptions<unknown>;
  readonly #logger: Logger;
  readonly #batcher: WriteBatcher<JsMsg>;
  #messages: ConsumerMessages | undefined;
  #loop: Promise<void> | undefined;

  constructor(write: InboxWrite<unknown>, options: NatsInboxOptions<unknown>) {
    const { stream, retryDelayMs = 1000 } = options;
    this.#options = options;
    this.#logger = options.logger ?? consoleLogger({ level: "warn" });
    this.#store = new InboxStore<JsMsg>(write, this.#logger, { stream }, (message, key, error) => {
      this.#logger.warn({ err: error, stream, seq: message.seq, key, retryDelayMs }, "inbox bridge: insert failed, message given back");
      message.nak(retryDelayMs);
    });
    this.#batcher = new WriteBatcher(
      options.maxMessages ?? 64,
      (messages) => this.#storeAll(messages),
      (error, messages) => {
        // Not expected (#storeAll settles each message itself): the messages go back to come again.
        this.#logger.error({ err: error, stream, messages: messages.length }, "inbox bridge: a write failed unexpectedly, messages given back");
        for (const message of messages) message.nak(retryDelayMs);
      },
    );
  }

  get counts(): InboxCounts {
    return this.#store.counts;
  }

  async start(): Promise<void> {
    if (this.#messages !== undefined) return;
    const { js, stream, consumer, maxMessages = 64 } = this.#options;
    const source = await js.consumers.get(stream, consumer);
    const messages = await source.consume({ max_messages: maxMessages });
    this.#messages = messages;
    this.#loop = (async () => {
      try {
        for await (const message of messages) await this.#batcher.add(message);
      } catch (error) {
        // The message iterator failed: nothing more comes from it; logged rather than a rejection nobody hears.
        this.#logger.error({ err: error, stream, consumer }, "inbox bridge: the consumer stopped delivering");
      }
    })();
  }

  async stop(): Promise<void> {
    const messages = this.#messages;
    if (messages === undefined) return;
    this.#messages = undefined;
    await messages.close();
    await this.#loop;
    await this.#batcher.idle();
  }

  /** Stores messages (in one write, else one by one: see InboxStore) and acks each whose row committed. */
  async #storeAll(messages: readonly JsMsg[]): Promise<void> {
    const ready: Inbound<JsMsg>[] = [];
    for (const message of messages) {
      const inbound = this.#inboundOf(message);
      if (inbound !== undefined) ready.push({ item: message, inbound });
    }
    for (const { item } of await this.#store.store(ready)) item.ack();
  }

  /** The message as a row to store; `undefined` for one that cannot be decoded (terminated, logged). */
  #inboundOf(message: JsMsg): Inbound<JsMsg>["inbound"] | undefined {
    const { stream, decode = json } = this.#options;
    const key = message.headers?.get("Nats-Msg-Id") || `${stream}:${message.seq}`;
    try {
      return { key, payload: decode(message.data, message), headers: headersOf(message) };
    } catch (error) {
      this.#logger.error({ err: error, stream, seq: message.seq, key }, "inbox bridge: message cannot be decoded, terminated");
      message.term("undecodable");
      return undefined;
    }
  }
}

function headersOf(message: JsMsg): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of message.headers?.keys() ?? []) out[name] = message.headers?.get(name) ?? "";
  return out;
}
