import type { AnyInboxSpec } from "@sqlinbox/core/internal";
import { consoleLogger, type Logger, type SqlBroker } from "@sqlinbox/runtime";
import { type Engine, type InboxRouteAllowed, type InboxWrite, inboxWriter, type PublishPayload } from "@sqlinbox/runtime/internal";
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from "mqtt";
import { ID_PROPERTY } from "./outbox.js";

/** Where an MQTT inbox bridge reads, and how it stores what it reads. */
export interface MqttInboxOptions<P> {
  /** The broker (`mqtt://127.0.0.1:1883`): the bridge connects a client of its own (MQTT 5, a persistent session). */
  readonly url: string;
  /** The session's client id: fixed across restarts, so the broker keeps what arrived while the bridge was away and gives back what it never acked. */
  readonly clientId: string;
  /** The topic filter subscribed at QoS 1 (`orders/#`). */
  readonly topic: string;
  /** How long the broker keeps the session after a disconnect (seconds, default 86400: a day). */
  readonly sessionExpirySeconds?: number;
  /** More connect options (username, password, TLS, …); the session, protocol and client id settings above win. */
  readonly connectOptions?: IClientOptions;
  /** The dedup key of a message; unset: its `sqlinbox-id` user property (what `mqttOutbox` sets). A message without one is acked without a row (logged as an error). */
  readonly key?: (topic: string, packet: IPublishPacket) => string | undefined;
  /** The payload from a message's body; unset: JSON. A throw acks the message without a row (logged as an error): it would fail every time. */
  readonly decode?: (payload: Buffer, topic: string, packet: IPublishPacket) => P;
  /** A failed insert is tried again after this long (ms, default 1000), the PUBACK held until it commits. */
  readonly retryDelayMs?: number;
  /** Where insert failures and dropped messages are logged (default: the console, warnings and errors). */
  readonly logger?: Logger;
}

/** What a bridge has done since it started. */
export interface InboxCounts {
  /** Messages stored as new rows. */
  readonly stored: number;
  /** Messages whose key a row already held: acked without a second row (redeliveries, a relay's resends). */
  readonly duplicates: number;
}

/** A running MQTT subscriber that stores each message as a row. */
export interface MqttInbox {
  /** Connects the session and subscribes; rejects when the broker refuses the connection or the subscription. */
  start(): Promise<void>;
  /** Lets the message in work finish (its insert and PUBACK) and disconnects; the session stays for `sessionExpirySeconds`. */
  stop(): Promise<void>;
  readonly counts: InboxCounts;
}

/**
 * An inbox bridge from an MQTT 5 broker: a persistent session (`clean: false`, a session expiry, a fixed client
 * id) subscribed at QoS 1 whose each message becomes a row of route `route`'s table, under its `sqlinbox-id`
 * user property (or `key`) as the table's dedup key, one at a time in arrival order. The PUBACK goes only after
 * the insert committed (the client's `handleMessage` hook, which MQTT.js calls before it sends the PUBACK and
 * which holds the next message until it returns); a message not acked when the connection or the process went
 * is sent again by the broker in the next connection of the session, finds its key taken and is acked without
 * a second row. The route's table needs a dedup key column (a compile error otherwise); its headers column, when
 * it has one, keeps the message's user properties (`traceparent` included).
 *
 * @example
 * const inbox = mqttInbox(broker, "payments", { url: "mqtt://127.0.0.1:1883", clientId: "shop-payments", topic: "payments/#" });
 * app.onStartup(() => inbox.start()).onShutdown(() => inbox.stop());
 */
export function mqttInbox<R extends Record<string, AnyInboxSpec>, N extends string, E extends Engine>(
  broker: SqlBroker<R, E>,
  route: N & InboxRouteAllowed<R, N>,
  options: MqttInboxOptions<PublishPayload<R, N>>,
): MqttInbox {
  if (options.clientId === "") throw new TypeError(`mqttInbox (route "${route}"): clientId is empty; a persistent session needs a fixed client id`);
  return new SessionInbox(inboxWriter(broker, route) as InboxWrite<unknown>, options as MqttInboxOptions<unknown>);
}

class SessionInbox implements MqttInbox {
  readonly #write: InboxWrite<unknown>;
  readonly #options: MqttInboxOptions<unknown>;
  readonly #logger: Logger;
  #client: MqttClient | undefined;
  #stopping = false;
  /** The message in work: stop() waits for it. */
  #current: Promise<void> = Promise.resolve();
  #stored = 0;
  #duplicates = 0;

  constructor(write: InboxWrite<unknown>, options: MqttInboxOptions<unknown>) {
    this.#write = write;
    this.#options = options;
    this.#logger = options.logger ?? consoleLogger({ level: "warn" });
  }

  get counts(): InboxCounts {
    return { stored: this.#stored, duplicates: this.#duplicates };
  }

  async start(): Promise<void> {
    if (this.#client !== undefined) return;
    const { url, clientId, topic, sessionExpirySeconds = 86_400, connectOptions = {} } = this.#options;
    this.#stopping = false;
    const client = mqtt.connect(url, {
      reconnectPeriod: 1000,
      ...connectOptions,
      clientId,
      protocolVersion: 5,
      clean: false,
      properties: { ...connectOptions.properties, sessionExpiryInterval: sessionExpirySeconds },
      manualConnect: true,
    });
    // Set before the connection: a resumed session's messages may come right after CONNACK.
    client.handleMessage = (packet, done) => {
      this.#current = this.#store(packet).then((acked) => {
        if (acked) done();
      });
    };
    client.on("error", (error) => this.#logger.warn({ err: error, clientId }, "inbox bridge: MQTT client error"));
    try {
      await new Promise<void>((resolve, reject) => {
        client.once("connect", () => resolve());
        client.once("error", reject);
        client.connect();
      });
      const [grant] = await client.subscribeAsync(topic, { qos: 1 });
      if (grant === undefined || grant.qos > 2) throw new Error(`mqttInbox: the broker refused the subscription to "${topic}" (code ${String(grant?.qos)})`);
      if (grant.qos !== 1) this.#logger.warn({ topic, qos: grant.qos }, "inbox bridge: the broker granted another QoS than 1");
    } catch (error) {
      await client.endAsync(true).catch(() => {});
      throw error;
    }
    this.#client = client;
  }

  async stop(): Promise<void> {
    const client = this.#client;
    if (client === undefined) return;
    this.#client = undefined;
    this.#stopping = true;
    await this.#current;
    // Not forced: the PUBACK of the last message stored is written before the DISCONNECT (a forced end may drop
    // it, and the session would send that message again). A connection that does not close within 2 s is forced.
    let forced: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      client.endAsync(false),
      new Promise<void>((resolve) => {
        forced = setTimeout(() => void client.endAsync(true).then(resolve, resolve), 2000);
      }),
    ]).finally(() => clearTimeout(forced));
  }

  /** Stores one message; true when it may be acked (stored, a duplicate, or never storable), false when stopping left it unstored. */
  async #store(packet: IPublishPacket): Promise<boolean> {
    const { topic } = packet;
    const { decode = (payload: Buffer) => JSON.parse(payload.toString("utf8")) as unknown, retryDelayMs = 1000 } = this.#options;
    const properties = packet.properties?.userProperties ?? {};
    const key = this.#options.key === undefined ? firstOf(properties[ID_PROPERTY]) : this.#options.key(topic, packet);
    if (key === undefined || key === "") {
      this.#logger.error({ topic }, `inbox bridge: message has no ${ID_PROPERTY} user property (and no key option names one), acked without a row`);
      return true;
    }
    let payload: unknown;
    try {
      payload = decode(Buffer.from(packet.payload), topic, packet);
    } catch (error) {
      this.#logger.error({ err: error, topic, key }, "inbox bridge: message cannot be decoded, acked without a row");
      return true;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(properties)) {
      const text = firstOf(value);
      if (name !== ID_PROPERTY && text !== undefined) headers[name] = text;
    }
    for (;;) {
      try {
        const { created } = await this.#write({ key, payload, headers });
        if (created) this.#stored++;
        else this.#duplicates++;
        return true;
      } catch (error) {
        // MQTT has no negative ack: the PUBACK waits (and the next message with it) until the insert commits.
        this.#logger.warn({ err: error, topic, key, retryDelayMs }, "inbox bridge: insert failed, trying again");
        if (this.#stopping) return false;
        await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
        if (this.#stopping) return false;
      }
    }
  }
}

function firstOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
