import type { ChannelModel } from "amqplib";

/**
 * A RabbitMQ connection as a relay or bridge takes it: one made by the caller (`await amqp.connect(url)`),
 * or a function that makes one (`() => amqp.connect(url)`). amqplib does not reconnect: a connection the
 * broker closed (a restart, a network cut) stays closed. With a function, a closed connection is replaced
 * by a new one on next use, and the connections it made are closed by the relay's `close()` or the
 * bridge's `stop()`; with a connection, its owner closes it, and once it closed every send fails.
 */
export type AmqpConnection = ChannelModel | (() => Promise<ChannelModel>);

/** The connection a relay or bridge is using now: the caller's, or the latest its factory made. */
export class ConnectionSource {
  readonly #source: AmqpConnection;
  readonly #what: string;
  #current: Promise<ChannelModel> | undefined;
  /** The caller's own connection closed: it cannot be reopened here. */
  #fixedClosed = false;

  constructor(source: AmqpConnection, what: string) {
    this.#source = source;
    this.#what = what;
    if (typeof source !== "function") source.once("close", () => (this.#fixedClosed = true));
  }

  /** True when a closed connection is replaced (a factory was given). */
  get reconnects(): boolean {
    return typeof this.#source === "function";
  }

  get(): Promise<ChannelModel> {
    const source = this.#source;
    if (typeof source !== "function") {
      if (this.#fixedClosed) {
        return Promise.reject(
          new Error(`${this.#what}: the RabbitMQ connection it was given is closed and cannot be reopened here; pass \`connection: () => amqp.connect(url)\` to have it reconnect`),
        );
      }
      return Promise.resolve(source);
    }
    if (this.#current !== undefined) return this.#current;
    const opening = source().then((connection) => {
      // An error on a connection is followed by its close; the close lets the next use open another.
      connection.on("error", () => {});
      connection.once("close", () => {
        if (this.#current === opening) this.#current = undefined;
      });
      return connection;
    });
    opening.catch(() => {
      if (this.#current === opening) this.#current = undefined;
    });
    this.#current = opening;
    return opening;
  }

  /** Closes the connection a factory made (the caller's own stays open); a later `get` makes a new one. */
  async close(): Promise<void> {
    const current = this.#current;
    this.#current = undefined;
    if (current === undefined || typeof this.#source !== "function") return;
    const connection = await current.catch(() => undefined);
    await connection?.close().catch(() => {});
  }
}
